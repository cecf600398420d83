/**
 * `npm run images -- --update-pins`: each recipe's versions set to what the suite has now, as apt
 * on this host sees it (`apt-cache madison`, after `apt-get update` when run as root). Debian keeps
 * only the newest revision of a package in a stable release, so a pin goes stale when a point or
 * security update replaces it; the build then says so and this refreshes it.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * The newest version `apt-cache madison` lists for the suite or its -updates / -security archives.
 * Its lines are "pkg | version | mirror suite/component arch Packages", newest first.
 */
export function newestInSuite(madison: string, suite: string): string | null {
  const archives = new Set([suite, `${suite}-updates`, `${suite}-security`]);
  for (const line of madison.split('\n')) {
    const [, version, source] = line.split('|').map((s) => s.trim());
    const archive = source?.split(/\s+/)[1]?.split('/')[0];
    if (version && archive && archives.has(archive) && / Packages$/.test(source!)) return version;
  }
  return null;
}

/** What apt on this host offers of each package in the suite; a package it does not know is missing. */
export function availableVersions(packages: string[], suite: string): { versions: Map<string, string>; missing: string[] } {
  const versions = new Map<string, string>();
  const missing: string[] = [];
  for (const name of packages) {
    const res = spawnSync('apt-cache', ['madison', name], { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    const version = res.status === 0 ? newestInSuite(res.stdout, suite) : null;
    if (version) versions.set(name, version);
    else missing.push(name);
  }
  return { versions, missing };
}

/**
 * The recipe file's text with each `"package": "version"` of its packages set to `versions`; the
 * rest of the file, its layout included, as it was (a refresh is a diff of versions only).
 */
export function withPins(text: string, versions: ReadonlyMap<string, string>): { text: string; changed: { name: string; from: string; to: string }[] } {
  const changed: { name: string; from: string; to: string }[] = [];
  const packagesBlock = /("packages"\s*:\s*\{)([^}]*)(\})/;
  const next = text.replace(packagesBlock, (_all, open: string, body: string, close: string) => {
    const pinned = body.replace(/"([a-z0-9][a-z0-9+.-]+)"(\s*:\s*)"([^"]*)"/g, (entry, name: string, colon: string, from: string) => {
      const to = versions.get(name);
      if (!to || to === from) return entry;
      changed.push({ name, from, to });
      return `"${name}"${colon}"${to}"`;
    });
    return `${open}${pinned}${close}`;
  });
  return { text: next, changed };
}

/** Refreshes one recipe file's pins; what changed, and which packages apt does not have at all. */
export function updatePinsOf(file: string, suite: string, packages: string[]): { changed: { name: string; from: string; to: string }[]; missing: string[] } {
  const { versions, missing } = availableVersions(packages, suite);
  const { text, changed } = withPins(readFileSync(file, 'utf8'), versions);
  if (changed.length) writeFileSync(file, text);
  return { changed, missing };
}

/** As root: apt's lists brought up to date first, otherwise the pins would be as old as they are. */
export function refreshAptLists(): { ok: boolean; why: string } {
  const res = spawnSync('apt-get', ['update', '-qq'], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return res.status === 0 ? { ok: true, why: '' } : { ok: false, why: (res.stderr || res.error?.message || '').trim().slice(-500) };
}
