/**
 * What the local-sandbox suite (vitest.local.config.ts) needs of the host, by Debian package. A test
 * that cannot run for want of one is skipped where a developer runs it, with a line naming the
 * package; under CI (`CI` set, as .ci/run does, which installs them all) it fails instead, naming it:
 * nothing there is skipped silently.
 *
 *   describe.skipIf(lacks('bubblewrap', 'python3-notebook'))('notebook proxy', () => { … });
 */
import { existsSync } from 'node:fs';
import { DESKTOP_PROGRAMS } from '../src/drivers/compute/local/desktop.js';
import { hostNotebook } from '../src/drivers/compute/local/notebook.js';
import { bwrapWorks } from '../src/drivers/compute/local/sandbox.js';

/** A file each package installs: there, the package is. */
const FILE_OF = {
  'util-linux': '/usr/bin/setpriv',
  python3: '/usr/bin/python3',
  e2fsprogs: '/usr/sbin/mkfs.ext4',
  'openssh-sftp-server': '/usr/lib/openssh/sftp-server',
  slirp4netns: '/usr/bin/slirp4netns',
  nftables: '/usr/sbin/nft',
  iproute2: '/sbin/ip',
  lxcfs: '/usr/bin/lxcfs',
  // What the desktop's test reads its windows (xprop) and clipboard with.
  'x11-utils': '/usr/bin/xprop',
  xclip: '/usr/bin/xclip',
} as const;

/** The package of each desktop program (desktop.ts), to name it when it is missing. */
const DESKTOP_PACKAGE_OF: Record<string, string> = {
  '/usr/bin/Xtigervnc': 'tigervnc-standalone-server',
  '/usr/bin/dbus-launch': 'dbus-x11',
  '/usr/bin/xfce4-session': 'xfce4-session',
  '/usr/bin/xfwm4': 'xfwm4',
  '/usr/bin/xfce4-panel': 'xfce4-panel',
  '/usr/bin/xfdesktop': 'xfdesktop4',
  '/usr/bin/xfce4-terminal': 'xfce4-terminal',
  '/usr/bin/thunar': 'thunar',
  '/usr/bin/chromium': 'chromium',
  '/usr/bin/fcitx5': 'fcitx5',
};

/**
 * What the tests may ask for: a package of FILE_OF; bubblewrap (bwrap that can make a sandbox);
 * python3-notebook (`python3 -m notebook` as the driver finds it); desktop (every program a 云桌面 runs).
 */
export type HostNeed = keyof typeof FILE_OF | 'bubblewrap' | 'python3-notebook' | 'desktop';

/** The packages a test may name (the desktop's are desktop.ts's), each of which .ci/run installs. */
export const HOST_PACKAGES = ['bubblewrap', 'python3-notebook', ...Object.keys(FILE_OF)];

/** Of what is asked for, what is missing: a line each, naming the Debian package. */
export function missingOf(needs: readonly HostNeed[]): string[] {
  return [...new Set(needs.flatMap(missing))];
}

function missing(need: HostNeed): string[] {
  switch (need) {
    case 'bubblewrap': {
      const works = bwrapWorks();
      return works.ok ? [] : [`bubblewrap (${works.why})`];
    }
    case 'python3-notebook':
      return hostNotebook() ? [] : ['python3-notebook (`/usr/bin/python3 -m notebook --version` answers no notebook 6.1 or later)'];
    case 'desktop':
      return DESKTOP_PROGRAMS.filter((p) => !existsSync(p)).map((p) => `${DESKTOP_PACKAGE_OF[p] ?? `the package of ${p}`} (no ${p})`);
    default:
      return existsSync(FILE_OF[need]) ? [] : [`${need} (no ${FILE_OF[need]})`];
  }
}

/**
 * Whether tests needing these must be skipped: true (and a line saying why) where something is
 * missing on a developer's machine; under CI an error naming the packages instead of a skip.
 */
export function lacks(...needs: HostNeed[]): boolean {
  return skipOrFail(missingOf(needs), process.env);
}

/** lacks, given what is missing and the environment: skips outside CI, throws in it. */
export function skipOrFail(missing: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (!missing.length) return false;
  const line = `needs the Debian package${missing.length > 1 ? 's' : ''} ${missing.join('; ')}`;
  if (underCi(env)) throw new Error(`local-sandbox test ${line}: under CI it fails instead of being skipped (.ci/run installs them)`);
  console.warn(`skipped: local-sandbox test ${line}`);
  return true;
}

function underCi(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.CI) && env.CI !== 'false' && env.CI !== '0';
}
