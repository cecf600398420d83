/**
 * The remote desktop of a real 云桌面 sandbox: the owner's WebSocket reaches its VNC server (the
 * RFB handshake noVNC starts with); other users and machines without a desktop do not. The desktop
 * is a usable Chinese one: a panel, no error dialog, pinyin input, a terminal and Chromium that
 * start from it, and a clipboard that carries Chinese both ways.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, ERRORS, type Order } from '@console/contract';
import { get, json, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { HOST_SYSTEM_IMAGE, listen, localEnv, localKit } from '../../../test/local-kit.js';
import { rfbClipboard } from '../../../test/rfb.js';
import { runIn, type Joinable } from '../../drivers/compute/local/sandbox.js';

let s: TestServer;
let base: string;
const kit = localKit(() => s);

async function runningDesktop(token: string): Promise<string> {
  const res = await post(s.app, API.orderCreate, { sizeId: 'dsk-c4m8', regionId: 'bj-b', imageId: HOST_SYSTEM_IMAGE, cycle: 'Usage', duration: 1 }, token);
  expect(res.statusCode, res.body).toBe(200);
  const [order] = json<{ items: Order[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', token)).items;
  await kit.reach(token, order!.resourceId!, 'Running');
  return order!.resourceId!;
}

/** Opens the desktop socket and reads the server's first RFB message (its protocol version), retrying while the desktop starts. */
async function rfbGreeting(id: string, token: string): Promise<string> {
  for (let i = 0; i < 60; i++) {
    const greeting = await new Promise<string | null>((resolve, reject) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceDesktop.replace(':id', id)}`, { headers: { authorization: `Bearer ${token}` } });
      ws.once('message', (data) => {
        resolve(data.toString());
        ws.close();
      });
      ws.once('close', () => resolve(null));
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
      ws.once('error', () => resolve(null));
    });
    if (greeting) return greeting;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the desktop never answered');
}

/**
 * Runs a shell script inside the machine in its desktop session's environment (the display, the
 * session bus, the language), as a program started from the desktop would; exit 3 before the session runs.
 */
function inSession(sandbox: Joinable, script: string) {
  const env = `for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = xfce4-session ] && s=\${p#/proc/} && break; done; [ -n "$s" ] || exit 3
eval "$(tr '\\0' '\\n' < /proc/$s/environ | grep -E '^(DISPLAY|DBUS_SESSION_BUS_ADDRESS|LANG|LANGUAGE|XMODIFIERS|GTK_IM_MODULE|TZ)=' | sed "s/^\\([^=]*\\)=\\(.*\\)$/export \\1='\\2'/")"
`;
  return runIn(sandbox, ['/bin/sh', '-c', env + script]);
}

interface DesktopWindow {
  wmClass: string;
  type: string;
  name: string;
}

/** The windows the window manager manages (its _NET_CLIENT_LIST): class, EWMH type and title of each. */
async function desktopWindows(sandbox: Joinable): Promise<DesktopWindow[]> {
  const r = await inSession(
    sandbox,
    `for w in $(xprop -root _NET_CLIENT_LIST | sed 's/^[^#]*# //; s/,//g'); do
  echo "$(xprop -id $w WM_CLASS | sed 's/^[^=]*= //')|$(xprop -id $w _NET_WM_WINDOW_TYPE | sed 's/^[^=]*= //')|$(xprop -id $w _NET_WM_NAME | sed 's/^[^=]*= //')"
done`,
  );
  return r.stdout
    .split('\n')
    .filter((l) => l.includes('|'))
    .map((l) => {
      const [wmClass = '', type = '', name = ''] = l.split('|');
      return { wmClass, type, name };
    });
}

/** Polls `read` until `ok` holds, for 90 s at most (a desktop starting on a loaded 2-core host); the last value either way. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 90_000;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    value = await read();
  }
  return value;
}

const ofClass = (c: string) => (w: DesktopWindow) => w.wmClass.includes(`"${c}"`);

beforeAll(async () => {
  s = await startTestServer({ env: localEnv() });
  base = await listen(s);
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap', 'desktop', 'x11-utils', 'xclip'))('remote desktop', () => {
  it('relays the owner to the VNC server of a 云桌面; nobody else, and no desktop for a GPU instance', async () => {
    const u = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await runningDesktop(u.token);
    expect((await kit.instance(u.token, id)).access).toMatchObject({ desktop: true });
    expect(await rfbGreeting(id, u.token)).toMatch(/^RFB 003\.00\d\n$/);
    await expect(rfbGreeting(id, other.token)).rejects.toMatchObject({ status: 403 });

    const gpu = await kit.runningInstance(u.token);
    expect((await kit.instance(u.token, gpu)).access).toMatchObject({ desktop: false });
    await expect(rfbGreeting(gpu, u.token)).rejects.toMatchObject({ status: 400 });
  });

  it('is a Chinese Xfce desktop: a panel, no dialog, pinyin, a terminal and Chromium started from it, the clipboard both ways in Chinese', async () => {
    const u = await kit.fundedUser('100');
    const id = await runningDesktop(u.token);
    await rfbGreeting(id, u.token);
    const sandbox = kit.driver().sandbox(id)!;

    // The panel and the desktop's own window, and nothing else: no error dialog (fluxbox's fbsetbg opened one).
    let windows = await until(
      () => desktopWindows(sandbox),
      (ws) => ws.some(ofClass('xfce4-panel')) && ws.some(ofClass('xfdesktop')),
    );
    expect(windows.filter(ofClass('xfce4-panel')).map((w) => w.type)).toContain('_NET_WM_WINDOW_TYPE_DOCK');
    expect(windows.find(ofClass('xfdesktop'))).toMatchObject({ type: '_NET_WM_WINDOW_TYPE_DESKTOP', name: '"桌面"' });
    expect(windows.filter((w) => !ofClass('xfce4-panel')(w) && !ofClass('xfdesktop')(w))).toEqual([]);

    // Chinese: the session's language, its fonts, its clock in Beijing time, and fcitx5 with pinyin in its input method group.
    const language = await inSession(sandbox, 'echo "$LANG"; fc-match -f "%{family}\\n" sans-serif:lang=zh-cn; date +%z');
    expect(language.stdout).toMatch(/^zh_CN\.UTF-8\nNoto Sans CJK SC.*\n\+0800\n$/);
    const pinyin = await until(
      () =>
        inSession(
          sandbox,
          `g=$(dbus-send --session --print-reply=literal --dest=org.fcitx.Fcitx5 /controller org.fcitx.Fcitx.Controller1.CurrentInputMethodGroup | tr -d ' ')
dbus-send --session --print-reply --dest=org.fcitx.Fcitx5 /controller org.fcitx.Fcitx.Controller1.InputMethodGroupInfo "string:$g"`,
        ),
      (r) => r.stdout.includes('"pinyin"'),
    );
    expect(pinyin.stdout).toContain('string "pinyin"');

    // The panel's 终端模拟器 and 网络浏览器 buttons (exo-open) open a terminal and Chromium.
    await inSession(sandbox, 'exo-open --launch TerminalEmulator >/dev/null 2>&1; exo-open --launch WebBrowser >/dev/null 2>&1');
    windows = await until(
      () => desktopWindows(sandbox),
      (ws) => ws.some(ofClass('xfce4-terminal')) && ws.some(ofClass('chromium')),
    );
    expect(windows.find(ofClass('xfce4-terminal'))).toBeDefined();
    expect(windows.find(ofClass('chromium'))?.name).toContain('新标签页');
    const known = ['xfce4-panel', 'xfdesktop', 'xfce4-terminal', 'chromium'].map(ofClass);
    expect(windows.filter((w) => !known.some((k) => k(w)))).toEqual([]);

    // The clipboard through the console's WebSocket, as noVNC uses it: the browser's text pasted
    // in the desktop, and what the desktop copies back in the browser, Chinese included.
    const clip = await rfbClipboard(`${base.replace('http', 'ws')}${API.instanceDesktop.replace(':id', id)}`, { authorization: `Bearer ${u.token}` });
    try {
      clip.paste('浏览器里复制的文字 abc');
      const pasted = await until(
        () => inSession(sandbox, 'xclip -o -selection clipboard'),
        (r) => r.stdout === '浏览器里复制的文字 abc',
      );
      expect(pasted.stdout).toBe('浏览器里复制的文字 abc');
      await inSession(sandbox, "printf '桌面里复制的文字 xyz' | xclip -i -selection clipboard >/dev/null 2>&1");
      let copied = await clip.nextCopy();
      for (let i = 0; i < 5 && copied !== '桌面里复制的文字 xyz'; i++) copied = await clip.nextCopy();
      expect(copied).toBe('桌面里复制的文字 xyz');
    } finally {
      clip.close();
    }
  }, 420_000);

  it('sells no 云游戏 or 跨境电商 machine, whose cards promise a gaming card and a clean IP of its own: not listed, an order refused with why', async () => {
    const u = await kit.fundedUser('100');
    const sizes = async (category: string) =>
      json<{ items: { id: string }[] }>(await get(s.app, `${API.sizes}?filterBy=category,${category}`)).items.map((i) => i.id);
    expect(await sizes('Desktop')).toEqual(['dsk-c4m8', 'dsk-c8m16']);
    expect(await sizes('Game')).toEqual([]);
    expect(await sizes('Ebusiness')).toEqual([]);
    const regions = json<{ items: { id: string; categories: string[] }[] }>(await get(s.app, API.regions)).items;
    expect(regions.flatMap((r) => r.categories)).not.toContain('Game');
    expect(regions.flatMap((r) => r.categories)).toContain('Desktop');

    const game = await post(
      s.app,
      API.orderCreate,
      { sizeId: 'game-3060', regionId: 'bj-b', imageId: 'ubuntu-22.04-desktop', cycle: 'Usage', duration: 1 },
      u.token,
    );
    expect(json(game)).toMatchObject({ code: ERRORS.CATALOGUE_ITEM_NOT_FOUND.code, detail: expect.stringContaining('云游戏需要游戏显卡') });
    const shop = await post(
      s.app,
      API.orderCreate,
      { sizeId: 'ebz-c2m4', regionId: 'sh-a', imageId: 'ubuntu-22.04-desktop', cycle: 'Usage', duration: 1 },
      u.token,
    );
    expect(json(shop)).toMatchObject({ code: ERRORS.CATALOGUE_ITEM_NOT_FOUND.code, detail: expect.stringContaining('独立纯净 IP') });
    expect(json<{ items: unknown[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', u.token)).items).toEqual([]);
  });

  it('offers the desktops this host can run: Linux ones, not Windows images, which are refused if asked for', async () => {
    const u = await kit.fundedUser('100');
    const images = json<{ items: { id: string; os: string; unavailable?: string }[] }>(
      await get(s.app, '/infra/api/v2.1/images?filterBy=category,Desktop'),
    ).items;
    expect(images.filter((i) => !i.unavailable).map((i) => i.id)).toEqual([HOST_SYSTEM_IMAGE]);
    expect(images.some((i) => i.os.startsWith('Windows'))).toBe(false);
    const res = await post(s.app, API.orderCreate, { sizeId: 'dsk-c4m8', regionId: 'bj-b', imageId: 'win-server-2022', cycle: 'Usage', duration: 1 }, u.token);
    expect(json(res)).toMatchObject({ code: ERRORS.IMAGE_INCOMPATIBLE.code, detail: expect.stringContaining('无法运行') });
    expect(json<{ items: unknown[] }>(await get(s.app, '/order/api/v2.1/orders?pageSize=1', u.token)).items).toEqual([]);
  });
});
