/**
 * Real instances (COMPUTE_DRIVER=local, bubblewrap sandboxes on this machine), in Chromium: a new
 * account buys a post-paid CPU instance, opens its web terminal from the list, types a command and
 * reads its output; a file written in the shell is on the instance's data disk; the login command and
 * password of the 登录信息 tab work with OpenSSH's own ssh and scp; a 云桌面's desktop is drawn in the
 * browser at /rdp/:id and /free/:id; a file uploaded to 文件存储 is at /root/shared in the instance.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './browser.js';
import { animationsDone, buttonLabel, canvasColours, rechargeInBrowser, registerInBrowser } from './console.js';
import { freePort, startServer, type RunningServer } from './server.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'terminal');
const NAME = 'e2e-shell';
const DESK = 'e2e-desk';
/** The image of the host's own system (catalogueOfThisHost): what the market on the local driver sells without built images. */
const HOST_SYSTEM = 'host-system';

/**
 * The shipped catalogue with an image of this host's own system, for CPU machines and desktops, and
 * the host's cores and memory sold several times over: a CPU machine and a desktop run at once here
 * (on a 2-core CI machine), and this journey is about using them, not about the market's limits.
 */
function catalogueOfThisHost(): string {
  const catalogue = JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server', 'catalogue', 'catalogue.json'), 'utf8'));
  const release = Object.fromEntries(
    readFileSync('/etc/os-release', 'utf8')
      .split('\n')
      .map((l) => /^([A-Z_]+)=["']?(.*?)["']?$/.exec(l))
      .filter((m) => m !== null)
      .map((m) => [m[1], m[2]]),
  );
  catalogue.settings = { ...catalogue.settings, hostCpuOvercommit: 8, hostMemoryOvercommit: 4 };
  catalogue.images.push({
    id: HOST_SYSTEM,
    kind: 'os',
    name: release.PRETTY_NAME ?? 'Linux',
    os: `${release.ID} ${release.VERSION_ID}`,
    forGpu: false,
    forCategories: ['Generic', 'Desktop'],
  });
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'console-e2e-catalogue-')), 'catalogue.json');
  writeFileSync(file, JSON.stringify(catalogue));
  return file;
}

describe('web terminal on a real instance', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let instanceId = '';
  let machinePort = 0;

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    // Each instance's notebook on an origin of its own, as browsers resolve *.localhost to this machine.
    machinePort = await freePort();
    server = await startServer({
      COMPUTE_DRIVER: 'local',
      CATALOGUE_FILE: catalogueOfThisHost(),
      SSH_GATEWAY_PORT: '0',
      MACHINE_PORT: String(machinePort),
      MACHINE_BASE_URL: `http://{id}.localhost:${machinePort}`,
    });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: 'zh-CN' })).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Buys a post-paid machine on the purchase page and waits for its row to read 运行中; its id. */
  async function buyRunning(query: string, name: string, hourly: string, listPath: string): Promise<string> {
    await page.goto(`${server.url}/stats/purchase?${query}&cycle=Hour&name=${name}`);
    await page.getByTestId('quote-total').getByText(hourly).waitFor();
    await page.getByRole('button', { name: '立即购买' }).click();
    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '确认订单' });
    await confirm.getByText(name).waitFor();
    await animationsDone(page);
    await confirm.getByRole('button', { name: '提交订单' }).click();
    await page.waitForURL(`**${listPath}`, { timeout: 60_000 });
    const line = page.locator('tr[data-row-key]').filter({ hasText: name });
    await line.locator('.ant-tag', { hasText: /^运行中$/ }).waitFor({ timeout: 30_000 });
    return (await line.getAttribute('data-row-key'))!;
  }

  const shot = (name: string) => animationsDone(page).then(() => page.screenshot({ path: path.join(shots, `${name}.png`) }));
  const row = () => page.locator('tr[data-row-key]').filter({ hasText: NAME });
  /** What the terminal shows, row by row (xterm's DOM renderer). */
  const screen = () => page.locator('[data-testid=web-terminal] .xterm-rows');

  it('buys a post-paid CPU instance that comes up running and offers a terminal', async () => {
    await registerInBrowser(page, server.url, '136', 'Shell12345');
    await rechargeInBrowser(browser, page, server.url, 100);
    instanceId = await buyRunning(`category=Generic&sizeId=gen-c2m4&imageId=${HOST_SYSTEM}`, NAME, '¥0.12', '/console/generic/cpu');
    await shot('10-list-running');
  });

  it('opens the terminal from the list, runs a command and reads its output', async () => {
    await row().getByRole('link', { name: '终端' }).click();
    await page.waitForURL((u) => u.searchParams.get('tab') === 'terminal');
    await page.getByTestId('terminal-status').getByText('已连接').waitFor({ timeout: 15_000 });
    await screen()
      .getByText(/root@instance-/)
      .waitFor();
    await page.locator('[data-testid=web-terminal] .xterm-helper-textarea').focus();
    await page.keyboard.type('echo hello-$((6*7)) > /root/autodl-tmp/from-browser.txt; cat /root/autodl-tmp/from-browser.txt; hostname\n');
    await screen().getByText('hello-42', { exact: true }).waitFor();
    await screen()
      .getByText(`instance-${instanceId.slice(0, 8)}`, { exact: true })
      .waitFor();
    await shot('20-terminal');
    // The file is on the instance's disks on the host: its data disk, or — an instance without one, its
    // system disk's image mounted on system/ (as root) — the system disk's /root/autodl-tmp.
    const dataDir = path.join(server.dataDir, 'local-compute', 'hosts');
    const [hostDir] = readdirSync(dataDir).filter((h) => readdirSync(path.join(dataDir, h)).includes(instanceId));
    const machineDir = path.join(dataDir, hostDir!, instanceId);
    const onHost = [path.join(machineDir, 'data', 'from-browser.txt'), path.join(machineDir, 'system', 'root', 'autodl-tmp', 'from-browser.txt')].find((f) =>
      existsSync(f),
    );
    expect(readFileSync(onHost!, 'utf8')).toBe('hello-42\n');
  });

  it('logs in with OpenSSH using the command and password of the 登录信息 tab, and copies a file back with scp', async () => {
    await page.getByRole('tab', { name: '登录信息' }).click();
    const command = (await page
      .locator('tr', { has: page.locator('th', { hasText: '登录指令' }) })
      .locator('.mono')
      .first()
      .textContent())!.trim();
    const m = /^ssh -p (\d+) (\w+)@(\S+)$/.exec(command);
    expect(m, command).not.toBeNull();
    await page.getByRole('button', { name: '显示' }).click();
    await shot('30-access');
    const [, port, user, host] = m!;
    const password = (await page.getByLabel('登录密码').textContent())!.trim();
    expect(password).not.toContain('•');
    // ssh reads the password from SSH_ASKPASS when forced to: no terminal needed.
    const dir = mkdtempSync(path.join(tmpdir(), 'console-e2e-ssh-'));
    const askpass = path.join(dir, 'askpass.sh');
    writeFileSync(askpass, `#!/bin/sh\necho '${password}'\n`);
    chmodSync(askpass, 0o700);
    const env = { ...process.env, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' };
    const opts = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];
    const out = execFileSync('ssh', [...opts, '-p', port!, `${user}@${host}`, 'cat /root/autodl-tmp/from-browser.txt; hostname'], { env, timeout: 20_000 });
    expect(out.toString()).toBe(`hello-42\ninstance-${instanceId.slice(0, 8)}\n`);
    execFileSync('scp', [...opts, '-P', port!, `${user}@${host}:/root/autodl-tmp/from-browser.txt`, path.join(dir, 'copy.txt')], { env, timeout: 20_000 });
    expect(readFileSync(path.join(dir, 'copy.txt'), 'utf8')).toBe('hello-42\n');
  });

  it('adds a public key in 账号中心 and logs in with OpenSSH and the 公钥登录 command, without a password', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'console-e2e-key-'));
    const key = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'e2e@laptop', '-f', key]);
    await page.goto(`${server.url}/console/account?tab=sshKeys`);
    await page
      .getByRole('button', { name: /添\s*加\s*公\s*钥/ })
      .first()
      .click();
    const dialog = page.getByRole('dialog', { name: '添加公钥' });
    await dialog.getByLabel('名称').fill('e2e 笔记本');
    await dialog.getByLabel('公钥', { exact: true }).fill(readFileSync(`${key}.pub`, 'utf8'));
    await dialog.getByRole('button', { name: buttonLabel('添加') }).click();
    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${key}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
    await page.getByText(fingerprint).waitFor();
    await shot('35-ssh-keys');

    await page.goto(`${server.url}/console/ipvm/detail/Generic/${instanceId}?tab=login`);
    await page.getByRole('tab', { name: '登录信息' }).click();
    const command = (await page
      .locator('tr', { has: page.locator('th', { hasText: '公钥登录' }) })
      .locator('.mono')
      .first()
      .textContent())!.trim();
    const m = /^ssh -p (\d+) (root\.[0-9a-f]{8})@(\S+)$/.exec(command);
    expect(m, command).not.toBeNull();
    const [, port, user, host] = m!;
    const opts = [
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'LogLevel=ERROR',
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
    ];
    const out = execFileSync('ssh', [...opts, '-i', key, '-p', port!, `${user}@${host}`, 'hostname'], { timeout: 20_000 });
    expect(out.toString()).toBe(`instance-${instanceId.slice(0, 8)}\n`);
  });

  it('opens the notebook of the instance from the 登录信息 tab, through the console', async () => {
    const [notebook] = await Promise.all([page.context().waitForEvent('page'), page.getByRole('link', { name: '打开 JupyterLab' }).click()]);
    await notebook.waitForURL(`**/jupyter/${instanceId}/tree**`);
    // The notebook starts with the machine: the first look may find it still starting.
    for (let i = 0; i < 20 && !(await notebook.locator('#notebook_list').count()); i++) {
      await new Promise((r) => setTimeout(r, 500));
      await notebook.reload();
    }
    await notebook.locator('#notebook_list').getByText('autodl-tmp').waitFor({ timeout: 15_000 });
    await notebook.screenshot({ path: path.join(shots, '40-notebook.png') });
    // Served on the instance's own origin: what runs in the machine cannot read the console's
    // session nor call its API as the user.
    expect(new URL(notebook.url()).origin).toBe(`http://${instanceId}.localhost:${machinePort}`);
    const seen = await notebook.evaluate(async (consoleUrl) => {
      const read = await fetch(`${consoleUrl}/userapi/api/v2.1/users/me/info`, { credentials: 'include' }).then(
        () => 'read',
        () => 'blocked',
      );
      return { storage: Object.keys(localStorage).length, ourCookies: /jweToken|machine-/.test(document.cookie), read };
    }, server.url);
    expect(seen).toEqual({ storage: 0, ourCookies: false, read: 'blocked' });
    expect(await page.evaluate(() => Object.keys(localStorage).length)).toBeGreaterThan(0);
    await notebook.close();
  });

  it('uploads a file to 文件存储 and reads it from the terminal at /root/shared', async () => {
    await page.goto(`${server.url}/console/gpudata/files`);
    await page.getByText('还没有文件').waitFor();
    const upload = path.join(mkdtempSync(path.join(tmpdir(), 'console-e2e-upload-')), '训练配置.txt');
    writeFileSync(upload, 'epochs=3\n');
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: '上传文件' }).click()]);
    await chooser.setFiles(upload);
    await page.locator('tr[data-row-key="/训练配置.txt"]').waitFor();
    await page.getByTestId('filestore-usage').getByText('已用 9 B').waitFor();
    await shot('45-filestore');

    await page.goto(`${server.url}/console/ipvm/detail/Generic/${instanceId}?tab=terminal`);
    await page.getByTestId('terminal-status').getByText('已连接').waitFor({ timeout: 15_000 });
    await page.locator('[data-testid=web-terminal] .xterm-helper-textarea').focus();
    await page.keyboard.type('cat /root/shared/训练配置.txt\n');
    await screen().getByText('epochs=3', { exact: true }).waitFor();
  });

  it('buys a 云桌面 and sees its desktop drawn at /rdp/:id and alone in the window at /free/:id', async () => {
    const deskId = await buyRunning(`category=Desktop&regionId=bj-b&sizeId=dsk-c4m8&imageId=${HOST_SYSTEM}`, DESK, '¥0.35', '/console/desktop');
    const desk = page.locator('tr[data-row-key]').filter({ hasText: DESK });

    await desk.getByRole('link', { name: '远程桌面' }).click();
    await page.waitForURL(`**/rdp/${deskId}`);
    await page.getByTestId('desktop-status').getByText('已连接').waitFor({ timeout: 20_000 });
    await expect.poll(() => canvasColours(page), { timeout: 15_000 }).toBeGreaterThan(1);
    await shot('50-rdp');

    await page.goto(`${server.url}/free/${deskId}`);
    await expect.poll(() => canvasColours(page), { timeout: 20_000 }).toBeGreaterThan(1);
    expect(await page.locator('.app-header').count()).toBe(0);
    await page.screenshot({ path: path.join(shots, '51-free.png') });
  });
});
