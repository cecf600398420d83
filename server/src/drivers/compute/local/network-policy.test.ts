/**
 * A machine's firewall (network-policy.ts) on real sandboxes: nothing of the host's own addresses
 * nor of private ranges answers from inside, the machine's own loopback does, a range the operator
 * opens is reached, an address out of those ranges is reached through the NAT, and the machine's
 * root can neither lift the rules nor send past them. Every address the tests connect to is this
 * machine's own: its interfaces, and a veth pair into a network namespace the test makes.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lacks } from '../../../../test/host-packages.js';
import { firewallRules, hostAddresses, networkPolicyWorks, parseAllowNets } from './network-policy.js';
import { layOut, runIn, sandboxPaths, startSandbox, stopSandbox, type RunningSandbox } from './sandbox.js';

describe('SANDBOX_ALLOW_NETS', () => {
  it('takes addresses and ranges, and names what is wrong', () => {
    expect(parseAllowNets(' 10.1.0.0/16, 192.168.5.7 ,fd00:1::/64,')).toEqual(['10.1.0.0/16', '192.168.5.7', 'fd00:1::/64']);
    expect(parseAllowNets('')).toEqual([]);
    expect(() => parseAllowNets('10.1.0.0/33')).toThrow('前缀长度应为 0–32');
    expect(() => parseAllowNets('intranet')).toThrow('不是 IP 地址或网段');
    expect(() => parseAllowNets('10.0.0.0/8/1')).toThrow('前缀长度');
  });

  it('shuts the host addresses first, then opens the allowed ranges before the blocked ones', () => {
    const rules = firewallRules(['10.1.0.0/16'], ['203.0.113.9', '2001:db8::9', '10.1.2.3']);
    expect(rules.indexOf('10.1.0.0/16')).toBeLessThan(rules.indexOf('10.0.0.0/8'));
    expect(rules.indexOf('10.1.2.3')).toBeLessThan(rules.indexOf('10.1.0.0/16'));
    expect(rules).toMatch(/ip daddr \{[^}]*203\.0\.113\.9[^}]*\} reject/);
    expect(rules).toMatch(/ip6 daddr \{[^}]*2001:db8::9[^}]*\} reject/);
  });
});

const asRoot = process.getuid?.() === 0;

// As root only; there, without a package it needs it is skipped only outside CI (host-packages).
describe.skipIf(!asRoot || lacks('bubblewrap', 'slirp4netns', 'nftables', 'iproute2'))('a machine’s firewall (as root, with slirp4netns and nftables)', () => {
  const host = mkdtempSync(path.join(tmpdir(), 'console-local-net-'));
  const resolvConf = path.join(host, 'resolv.conf');
  writeFileSync(resolvConf, 'nameserver 10.0.2.3\n');
  const running: RunningSandbox[] = [];
  const servers: Server[] = [];
  // A private address on this machine (on the host's end of a veth pair) and an "outside" address:
  // the pair's far end, in a network namespace of the test's, routed from the host like any other network.
  // The namespace is held by a process of the test (not `ip netns`, whose mounts are the host's).
  const veth = `gcve${process.pid % 10000}`;
  let holder: ChildProcess;
  const inNs = (cmd: string) => `nsenter --target ${holder.pid} --net ${cmd}`;
  const privateAddr = '10.213.7.1';
  const outside = '198.51.100.2';
  /** A private address of another machine (in the test's namespace), in the same range as the host's privateAddr. */
  const otherPrivate = '10.213.8.2';
  let port = 0;
  const sh = (cmd: string) => execFileSync('/bin/sh', ['-c', cmd], { stdio: ['ignore', 'ignore', 'pipe'] });

  beforeAll(async () => {
    expect(networkPolicyWorks().ok).toBe(true);
    holder = spawn('unshare', ['--net', 'sleep', 'infinity'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 50 && readlinkSync(`/proc/${holder.pid}/ns/net`) === readlinkSync('/proc/self/ns/net'); i++)
      await new Promise((r) => setTimeout(r, 100));
    sh(`ip link add ${veth} type veth peer name ${veth}p netns ${holder.pid}`);
    sh(`ip addr add 198.51.100.1/30 dev ${veth} && ip addr add ${privateAddr}/32 dev ${veth} && ip link set ${veth} up`);
    sh(inNs(`sh -c 'ip addr add ${outside}/30 dev ${veth}p && ip addr add ${otherPrivate}/32 dev ${veth}p && ip link set ${veth}p up && ip link set lo up'`));
    sh(`ip route add ${otherPrivate}/32 dev ${veth} src 198.51.100.1`);
    // Every address the machines are sent to is this machine's or the test namespace's.
    expect(hostAddresses()).toEqual(expect.arrayContaining([privateAddr, '198.51.100.1']));
    // One listener on every address of the host (0.0.0.0), the way a database or the console listens.
    const listening = createServer((c) => c.end('host-secret\n'));
    await new Promise<void>((r) => listening.listen(0, '0.0.0.0', () => r()));
    servers.push(listening);
    port = (listening.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of running) await stopSandbox(s);
    for (const s of servers) s.close();
    holder?.kill(); // its namespace goes with it, and the veth pair with that
    rmSync(host, { recursive: true, force: true });
  });

  async function machine(id: string, allowNets: string[] = []) {
    const paths = sandboxPaths(host, id);
    await layOut(paths, `inst-${id}`, null);
    const s = await startSandbox(paths, { hostname: `inst-${id}`, gpuDevices: [], env: {}, resolvConf, allowNets });
    running.push(s);
    return (script: string) => runIn(s, ['/bin/bash', '-c', script]);
  }
  /**
   * Listens once on `addr`:`p` in the test's namespace, answering `reply`, and probes it from the
   * machine until it answers (the listener takes a moment to start): what the last probe printed.
   */
  async function reachInNamespace(inside: Awaited<ReturnType<typeof machine>>, addr: string, p: number, reply: string) {
    const listener = `${inNs('python3')} -c "import socket; s = socket.socket(); s.bind(('${addr}', ${p})); s.listen(); c, _ = s.accept(); c.sendall(b'${reply}\\n'); c.close()"`;
    const server = execFileSync('/bin/sh', ['-c', `(${listener}) >/dev/null 2>&1 & echo $!`])
      .toString()
      .trim();
    try {
      let reached = '';
      for (let i = 0; i < 50 && reached !== `${reply}\nreached\n`; i++) reached = (await inside(probe(addr, p))).stdout;
      return reached;
    } finally {
      sh(`kill ${server} 2>/dev/null; true`);
    }
  }
  const probe = (addr: string, p = port) => `timeout 5 bash -c 'exec 3<>/dev/tcp/${addr}/${p} && cat <&3' 2>/dev/null && echo reached || echo refused`;

  it("reaches nothing of the host's addresses nor of private ranges, its own loopback and the outside yes", async () => {
    const inside = await machine('deny');
    const hostOwn = hostAddresses().filter((a) => !a.includes(':'));
    expect(hostOwn.length, 'this host has a network address').toBeGreaterThan(0);
    for (const addr of [...hostOwn, privateAddr, '198.51.100.1', '127.0.0.1', '10.0.2.2']) {
      expect((await inside(probe(addr))).stdout, addr).toBe('refused\n');
    }
    // The machine's own loopback is its own.
    const loop = await inside(
      `python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 7001)); s.listen(); c = socket.create_connection(('127.0.0.1', 7001)); print('loopback ok')"`,
    );
    expect(loop.stdout).toBe('loopback ok\n');
    // An address out of the blocked ranges: a listener in the test's namespace answers through the NAT.
    expect(await reachInNamespace(inside, outside, 7002, 'outside')).toBe('outside\nreached\n');
  });

  it("cannot be lifted or passed by the machine's root", async () => {
    const inside = await machine('root');
    const tries = await inside(
      [
        'nft flush ruleset 2>/dev/null && echo flushed',
        `python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" 2>/dev/null && echo packet-socket`,
        `python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)" 2>/dev/null && echo raw-socket`,
        'true',
      ].join('; '),
    );
    expect(tries.stdout).toBe('');
    expect((await inside(probe(privateAddr))).stdout).toBe('refused\n');
    // ping's way without CAP_NET_RAW: an ICMP datagram socket, which the firewall sees.
    const icmp = `python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); print('icmp ok')"`;
    expect((await inside(icmp)).stdout).toBe('icmp ok\n');
  });

  it("leaves the host's named network namespaces alone (slirp4netns's own sandbox used to unmount them)", async () => {
    const named = `gcns${process.pid % 10000}`;
    sh(`ip netns add ${named}`);
    try {
      await machine('named');
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain(`/run/netns/${named} `);
    } finally {
      sh(`ip netns del ${named} 2>/dev/null; true`);
    }
  });

  it("reaches the ranges the operator opens (SANDBOX_ALLOW_NETS), and still not the rest nor the host's own addresses in them", async () => {
    const inside = await machine('allow', ['10.213.0.0/16']);
    expect(await reachInNamespace(inside, otherPrivate, 7003, 'other')).toBe('other\nreached\n');
    // The host's address inside the opened range stays shut: opening a network never opens the host's services.
    expect((await inside(probe(privateAddr))).stdout).toBe('refused\n');
    expect((await inside(probe('198.51.100.1'))).stdout).toBe('refused\n');
    expect((await inside(probe('192.168.77.1'))).stdout).toBe('refused\n');
  });
});
