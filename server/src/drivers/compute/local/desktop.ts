/**
 * The desktop of a 云桌面 machine on the local driver: a Chinese Xfce desktop (panel, terminal, file
 * manager, Chromium, fcitx5 pinyin, Noto CJK fonts) on an X server of its own inside the machine's
 * sandbox, served as VNC (RFB) on a Unix socket of the sandbox's /run; the console relays the
 * browser's noVNC WebSocket to it. Everything runs from the machine's read-only /usr: its image's
 * (a desktop image of `npm run images`), or the host's for an image without an OCI reference
 * (Debian packages, README "Local machines").
 */
import { spawn } from 'node:child_process';
import { execIn, inRoot, type Joinable } from './sandbox.js';

/**
 * What a desktop needs in the machine's /usr: Debian's tigervnc-standalone-server, dbus-x11, xfce4-session, xfwm4,
 * xfce4-panel, xfdesktop4, xfce4-terminal, thunar, chromium (its Chinese in chromium-l10n) and fcitx5
 * (pinyin in fcitx5-chinese-addons). Without one of them no machine of this host gets a desktop.
 */
export const DESKTOP_PROGRAMS = [
  '/usr/bin/Xtigervnc',
  '/usr/bin/dbus-launch',
  '/usr/bin/xfce4-session',
  '/usr/bin/xfwm4',
  '/usr/bin/xfce4-panel',
  '/usr/bin/xfdesktop',
  '/usr/bin/xfce4-terminal',
  '/usr/bin/thunar',
  '/usr/bin/chromium',
  '/usr/bin/fcitx5',
];

/** Whether a machine on `root` (`/`: the host's system; else an image's rootfs) can have the desktop. */
export function desktopIn(root: string): boolean {
  return DESKTOP_PROGRAMS.every((p) => inRoot(root, p) !== null);
}

/**
 * The settings a desktop reads from /etc (Xfce's defaults: the panel's layout, the menu, the
 * session's programs; fontconfig's; Chromium's flags) and fontconfig's cache of the fonts (without
 * it every program scans the CJK fonts again), of the system the machine's /usr comes from (the
 * host's, or its image's). The machine's /etc is its own, so they are copied into it at each
 * desktop start, what the machine already has kept: its root may change them as on any Debian
 * desktop. Only configuration of programs from /usr, nothing secret.
 */
const HOST_SETTINGS = [
  'etc/xdg/xfce4',
  'etc/xdg/menus',
  'etc/xdg/autostart',
  'etc/xdg/Thunar',
  'etc/xdg/user-dirs.conf',
  'etc/xdg/user-dirs.defaults',
  'etc/xfce4',
  'etc/fonts',
  'etc/chromium.d',
  'var/cache/fontconfig',
];
/** The accessibility bus (at-spi) costs three processes and is of no use to a remote desktop. */
const LEFT_OUT = ['etc/xdg/autostart/at-spi-dbus-bus.desktop'];

/**
 * Chromium runs as the machine's root, which it refuses without --no-sandbox, and its own sandbox
 * would need user namespaces, which a machine of a console running as root is not given
 * (bwrapArgs: --disable-userns). Its pages are held
 * by the machine's sandbox instead: they reach only what the machine reaches. Debian's launcher adds
 * flags from /etc/chromium.d. No first-run page either: it is an English sign-in prompt. --test-type
 * hides the yellow bar warning about --no-sandbox on every window (the isolation is the machine's).
 */
const CHROMIUM_FLAGS = `# 云桌面：Chromium 以 root 运行、实例内没有 user namespace，它自带的沙箱无法启用；页面仍受实例本身的隔离
export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox --test-type --no-first-run"
`;

/**
 * The desktop inside the sandbox, as its root. The host's settings come in on standard input (a
 * tar archive). zh_CN.UTF-8 where the host has generated that locale (README), C.UTF-8 otherwise;
 * the clock in Beijing time.
 * TigerVNC's X server is the display and the VNC server in one (no screen polling); its clipboard
 * is the desktop's CLIPBOARD and PRIMARY both ways, in UTF-8 with clients that speak the extended
 * clipboard (noVNC does), so Chinese text crosses it. The session comes back when it ends (注销 in
 * the menu), so the desktop never stays black.
 */
const DESKTOP = `
tar -x -C / --skip-old-files --no-same-owner 2>/dev/null
mkdir -p /etc/chromium.d
[ -e /etc/chromium.d/desktop-flags ] || cat > /etc/chromium.d/desktop-flags <<'FLAGS'
${CHROMIUM_FLAGS}FLAGS
if locale -a 2>/dev/null | grep -qx zh_CN.utf8; then export LANG=zh_CN.UTF-8 LANGUAGE=zh_CN:zh; fi
# The panel's clock in Beijing time, as the console shows every time, unless the machine's root chose a zone.
[ -n "$TZ" ] || export TZ=Asia/Shanghai
export DISPLAY=:1 XDG_RUNTIME_DIR=/run/user/0 XDG_SESSION_TYPE=x11 XDG_CURRENT_DESKTOP=XFCE NO_AT_BRIDGE=1
export GTK_IM_MODULE=fcitx QT_IM_MODULE=fcitx SDL_IM_MODULE=fcitx XMODIFIERS=@im=fcitx
mkdir -p -m 700 $XDG_RUNTIME_DIR /var/lib/dbus
dbus-uuidgen --ensure 2>/dev/null
Xtigervnc :1 -geometry 1280x800 -depth 24 -dpi 96 -nolisten tcp -rfbport -1 -rfbunixpath /run/desktop.sock -SecurityTypes None -AlwaysShared -desktop 云桌面 >/dev/null 2>&1 &
for i in $(seq 400); do [ -e /tmp/.X11-unix/X1 ] && break; sleep 0.05; done
eval "$(dbus-launch --sh-syntax --exit-with-x11)"
fcitx5 -d >/dev/null 2>&1
(while :; do xfce4-session; sleep 2; done) >/dev/null 2>&1 &
wait
`;

/**
 * Starts the desktop inside the sandbox (serviceSocket(sandbox, 'desktop')); it ends with the
 * sandbox. `root`: the system its settings come from (`/`, or the machine's image's rootfs).
 */
export function startDesktop(sandbox: Joinable, log?: (m: string) => void, root = '/'): void {
  const present = HOST_SETTINGS.filter((p) => inRoot(root, `/${p}`) !== null);
  const settings = spawn('tar', ['-c', '-C', root, ...LEFT_OUT.map((p) => `--exclude=${p}`), ...present], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const desktop = execIn(sandbox, ['/bin/sh', '-c', DESKTOP], { stdio: [settings.stdout, 'ignore', 'ignore'] });
  // The desktop holds the archive's reading end now; the server's copy closed, tar ends if the desktop does.
  settings.stdout!.destroy();
  settings.once('error', (e) => log?.(`local compute: 桌面设置无法复制（${e.message}）`));
  desktop.once('error', (e) => log?.(`local compute: 桌面无法启动（${e.message}）`));
}
