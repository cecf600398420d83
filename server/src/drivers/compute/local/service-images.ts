/**
 * Which images of this host offer which of a machine's services (the notebook, the 6006 relay, the
 * desktop, the SSH gateway's sftp), so that a machine whose image lacks one is told which image has it (serviceMissing).
 * An image is judged by the names in its layers — what its /usr would hold once unpacked — read once
 * per layer with `tar -t` (a few seconds for a large image, in the background): it need not be
 * unpacked on this host, nor ever have run. Saved images are users' own, never named to others.
 */
import path from 'node:path';
import { SFTP_SERVER, type MachineService } from '../types.js';
import { DESKTOP_PROGRAMS } from './desktop.js';
import { notebookOf } from './notebook.js';
import type { OciImageInfo, OciLayout } from './oci/layout.js';
import { memberNames } from './oci/rootfs.js';
import { PYTHON } from './sandbox.js';

/** An image a machine may be made from, with what its machines offer. */
export interface ServiceImage {
  ref: string;
  /** What the image calls itself (org.opencontainers.image.title), else its reference. */
  title: string;
  services: readonly Feature[];
}

/** What a machine may lack: a service of the console's, or the program sftp and scp run. */
export type Feature = MachineService | 'sftp';

const TITLE = 'org.opencontainers.image.title';
/** The layout's saved images (machine-image.ts savedRef). */
const SAVED_PREFIX = 'saved/';

/** A notebook's metadata folder where Debian's packages or pip put it, with its version. */
const NOTEBOOK_INFO = /^usr\/(?:local\/)?lib\/python3(?:\.\d+)?\/(?:dist|site)-packages\/notebook-(\d+\.\d+[^/-]*?)\.(?:dist|egg)-info$/;

/** The programs whose presence decides a service (absolute paths inside the image). */
const PROGRAMS = new Set<string>([PYTHON, SFTP_SERVER, ...DESKTOP_PROGRAMS].map((p) => p.slice(1)));

/** A layer's member name as a path inside the image ('./usr/bin/x/' → 'usr/bin/x'). */
function clean(name: string): string {
  return name.replace(/^\.\//, '').replace(/\/$/, '');
}

/** Whether a name (cleaned) says something of a service: a program it needs, a notebook's metadata folder. */
function decides(name: string): boolean {
  return PROGRAMS.has(name) || NOTEBOOK_INFO.test(name);
}

/** Of a layer's names, those that decide a service, and the whiteouts of such names (the rest is never kept). */
export function decidingNames(names: Iterable<string>): string[] {
  const out: string[] = [];
  for (const raw of names) {
    const name = clean(raw);
    const base = path.posix.basename(name);
    if (decides(name) || (base.startsWith('.wh.') && decides(path.posix.join(path.posix.dirname(name), base.slice(4))))) out.push(name);
  }
  return out;
}

/** The services a machine of an image with these files offers (the same rules as machineServices on an unpacked rootfs). */
export function servicesOfNames(names: Iterable<string>): Feature[] {
  const present = new Set([...names].map(clean));
  const notebook = [...present].some((n) => {
    const m = NOTEBOOK_INFO.exec(n);
    return m !== null && notebookOf({ status: 0, stdout: m[1]! }) !== null;
  });
  const has = (program: string) => present.has(program.slice(1));
  const out: Feature[] = [];
  if (has(PYTHON) && notebook) out.push('jupyter');
  if (has(PYTHON)) out.push('service');
  if (DESKTOP_PROGRAMS.every(has)) out.push('desktop');
  if (has(SFTP_SERVER)) out.push('sftp');
  return out;
}

export class ServiceImages {
  /** Each layer's deciding names (decidingNames), read once: a layer's digest never changes what it holds. */
  private readonly layers = new Map<string, Promise<string[]>>();
  private known: ServiceImage[] = [];
  private refreshing: Promise<void> | null = null;

  constructor(private readonly layout: () => Promise<OciLayout>) {}

  /** Looks at the layout's images again (new ones are read; the rest come from memory); one look at a time. */
  refresh(): Promise<void> {
    this.refreshing ??= this.look().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** The images known to offer `service`, as the user reads them: 「title（ref）」. */
  offering(service: Feature): string[] {
    return this.known.filter((i) => i.services.includes(service)).map((i) => (i.title === i.ref ? i.ref : `${i.title}（${i.ref}）`));
  }

  private async look(): Promise<void> {
    const layout = await this.layout();
    const images = (await layout.list()).filter((i) => i.ref && !i.ref.startsWith(SAVED_PREFIX));
    const known: ServiceImage[] = [];
    for (const image of images) {
      const services = await this.servicesOf(layout, image).catch(() => null);
      if (services) known.push({ ref: image.ref, title: image.annotations[TITLE] || image.ref, services });
    }
    this.known = known;
  }

  private async servicesOf(layout: OciLayout, image: OciImageInfo): Promise<Feature[]> {
    const present = new Set<string>();
    // Layers in order: a later layer's whiteout removes what an earlier one had.
    for (const layer of image.layers) {
      for (const name of await this.namesOf(layout, layer.digest)) {
        const base = path.posix.basename(name);
        if (base.startsWith('.wh.')) present.delete(path.posix.join(path.posix.dirname(name), base.slice(4)));
        else present.add(name);
      }
    }
    return servicesOfNames(present);
  }

  private namesOf(layout: OciLayout, digest: string): Promise<string[]> {
    let names = this.layers.get(digest);
    if (!names) {
      names = memberNames(layout.blobPath(digest)).then(decidingNames);
      names.catch(() => this.layers.delete(digest));
      this.layers.set(digest, names);
    }
    return names;
  }
}
