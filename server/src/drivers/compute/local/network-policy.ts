/**
 * Where a local machine's traffic may go (issue 28 §1). Its outgoing connections leave through
 * slirp4netns's user-space NAT, which opens them as sockets of the host: without a rule, a machine
 * reaches every service of the host on a non-loopback address (`0.0.0.0` listeners: a PostgreSQL,
 * the console itself) and every private network the host is on, as the host. So before anything
 * runs in a machine, the host's root sets a firewall in the machine's network namespace (nftables):
 * the public internet is reachable, the NAT's name server too, and nothing of the host's own
 * addresses nor of the private, link-local and shared ranges — unless the operator opens a range by
 * SANDBOX_ALLOW_NETS. The machine's root cannot change it: it has no CAP_NET_ADMIN, and no
 * CAP_NET_RAW either (a packet socket would write frames to the NAT past the firewall; ping goes
 * through ICMP datagram sockets, which the firewall sees).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

export const NFT = '/usr/sbin/nft';

/** The NAT's name server (slirp4netns's 10.0.2.3): the one address of its network a machine reaches. */
const NAT_DNS = '10.0.2.3';

/** What a machine never reaches unless allowed: this network, loopback, private, shared, link-local, multicast and reserved ranges. */
const BLOCKED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.168.0.0/16',
  // Benchmarking: some VPNs and clouds use it inside.
  '198.18.0.0/15',
  '224.0.0.0/3',
];
/** The same for IPv6 (slirp4netns gives none by default; kept shut whatever its options): unique-local, link-local, v4-mapped, multicast. */
const BLOCKED_V6 = ['::/127', '::ffff:0:0/96', 'fc00::/7', 'fe80::/10', 'ff00::/8'];

/** Whether the firewall can be set here (Debian package nftables); without it machines get no outgoing network. */
export function networkPolicyWorks(): { ok: boolean; why: string } {
  if (!existsSync(NFT)) return { ok: false, why: '缺少 nft（Debian 软件包 nftables），实例没有外网' };
  return { ok: true, why: '实例可访问公网，宿主地址与内网地址段不可达' };
}

/**
 * SANDBOX_ALLOW_NETS: comma-separated addresses or CIDR ranges (`10.1.0.0/16,fd00:1::/64`). Throws
 * with what is wrong with the first bad entry (config.ts turns it into the variable's message).
 */
export function parseAllowNets(value: string): string[] {
  const nets = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const net of nets) {
    const [addr, bits, extra] = net.split('/');
    const max = isIPv4(addr ?? '') ? 32 : isIPv6(addr ?? '') ? 128 : 0;
    if (!max) throw new Error(`"${net}" 不是 IP 地址或网段`);
    if (extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))) throw new Error(`"${net}" 的前缀长度应为 0–${max}`);
  }
  return nets;
}

/**
 * The host's own addresses (loopback's are blocked as a range). The kernel's lists, not only Node's
 * (networkInterfaces leaves out an interface without carrier, whose addresses are still the host's).
 */
export function hostAddresses(): string[] {
  const found = new Set<string>();
  for (const a of Object.values(networkInterfaces()).flat()) if (a && !a.internal) found.add(a.address.replace(/%.*$/, ''));
  for (const a of [...kernelLocalV4(), ...kernelV6()]) found.add(a);
  return [...found].filter((a) => !a.startsWith('127.') && a !== '::1');
}

/** Local IPv4 addresses from the routing trie: each `|-- <address>` followed by `/32 host LOCAL`. */
function kernelLocalV4(): string[] {
  const out: string[] = [];
  let last = '';
  for (const line of readOr('/proc/net/fib_trie').split('\n')) {
    const leaf = /\|-- (\d+\.\d+\.\d+\.\d+)/.exec(line);
    if (leaf) last = leaf[1]!;
    else if (/\/32 host LOCAL/.test(line) && isIPv4(last)) out.push(last);
  }
  return out;
}

/** IPv6 addresses of every interface (32 hex digits, written in eight groups). */
function kernelV6(): string[] {
  return readOr('/proc/net/if_inet6')
    .split('\n')
    .map((l) => l.split(/\s+/)[0] ?? '')
    .filter((hex) => /^[0-9a-f]{32}$/.test(hex))
    .map((hex) => new URL(`http://[${hex.match(/.{4}/g)!.join(':')}]`).hostname.slice(1, -1)); // written short, as Node writes it
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * The nftables script of a machine's firewall: the host's own addresses shut first — a range the
 * operator opens never opens the host's services with it — then `allow`, then the blocked ranges.
 */
export function firewallRules(allow: readonly string[], host: readonly string[]): string {
  const v4 = (list: readonly string[]) => list.filter((a) => isIPv4(a.split('/')[0]!));
  const v6 = (list: readonly string[]) => list.filter((a) => isIPv6(a.split('/')[0]!));
  const set = (list: readonly string[]) => `{ ${list.join(', ')} }`;
  const lines = [
    'table inet machine {',
    '  chain out {',
    '    type filter hook output priority 0; policy accept;',
    '    oifname "lo" accept',
    `    ip daddr ${NAT_DNS} meta l4proto { tcp, udp } th dport 53 accept`,
    ...(v4(host).length ? [`    ip daddr ${set(v4(host))} reject with icmpx admin-prohibited`] : []),
    ...(v6(host).length ? [`    ip6 daddr ${set(v6(host))} reject with icmpx admin-prohibited`] : []),
    ...(v4(allow).length ? [`    ip daddr ${set(v4(allow))} accept`] : []),
    ...(v6(allow).length ? [`    ip6 daddr ${set(v6(allow))} accept`] : []),
    `    ip daddr ${set(BLOCKED_V4)} reject with icmpx admin-prohibited`,
    `    ip6 daddr ${set(BLOCKED_V6)} reject with icmpx admin-prohibited`,
    '  }',
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Sets the firewall in the network namespace of the sandbox whose first process is `initPid`, as
 * the host's root (or, for a server that is not root, as the sandbox's owner through its user
 * namespace), and lets the machine's users ping. Resolves once set; rejects with nft's message.
 */
export async function applyFirewall(initPid: number, allow: readonly string[]): Promise<void> {
  const enter = ['--target', String(initPid), ...(process.getuid?.() === 0 ? [] : ['--user', '--preserve-credentials']), '--net'];
  await runWithInput('nsenter', [...enter, NFT, '-f', '-'], firewallRules(allow, hostAddresses()));
  // ping without CAP_NET_RAW: ICMP datagram sockets for every group of the machine (best effort: ping only).
  await runWithInput('nsenter', [...enter, '/usr/sbin/sysctl', '-q', '-w', 'net.ipv4.ping_group_range=0 2147483647'], '').catch(() => {});
}

function runWithInput(file: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`实例防火墙设置失败：${stderr.trim() || `退出码 ${code}`}`))));
    child.stdin!.on('error', () => {}); // a command that reads no input (sysctl) closes it: its exit code says what happened
    child.stdin!.end(input);
  });
}
