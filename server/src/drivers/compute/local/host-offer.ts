/**
 * What this host really has (issue 30 §3): its cores, memory, the free disk under the driver's
 * folder, its NVIDIA cards, the OCI images in its layout and its own system. The market on the local
 * driver sells only that (modules/catalogue/host-market.ts decides what is offered).
 */
import { readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inArray } from 'drizzle-orm';
import type { Db } from '../../../db/client.js';
import type { HostOffer, MachineSpec } from '../types.js';
import { OciLayout } from './oci/layout.js';
import { localMachines } from './schema.js';

const GIB = 1024 ** 3;

/** A card as the host reports it (gpus.ts's hostGpus()); only what the market needs. */
export interface HostCard {
  model: string;
  memoryMb: number;
}

/** A machine that holds part of the host: its size and whether it runs with its cards. */
export interface HeldMachine {
  cpu: number;
  memoryGb: number;
  gpuCount: number;
}

export interface HostOfferSources {
  /** Where the machines' disks live: its file system's free space is the host's disk. */
  dir: string;
  cards: () => Promise<readonly HostCard[]> | readonly HostCard[];
  /** The references of the images in the host's layout. */
  images: () => Promise<readonly string[]>;
  /** The machines creating or running now. */
  held: () => Promise<readonly HeldMachine[]>;
  /** The host's /etc/os-release (a parameter for tests). */
  osRelease?: string;
  cpus?: number;
  memoryBytes?: number;
}

/** This host's offer as the local driver of `dir` sees it: its layout at `<dir>/oci`, its machines in `db`, its `cards` (gpus.ts). */
export function localHostOffer(dir: string, db: Db, cards: HostOfferSources['cards']): Promise<HostOffer> {
  return readHostOffer({
    dir,
    cards,
    images: async () => (await (await OciLayout.open(path.join(dir, 'oci'))).list()).map((i) => i.ref).filter(Boolean),
    held: () => heldMachines(db),
  });
}

/** The machines that hold part of the host: creating or running (a stopped one holds nothing until it starts). */
async function heldMachines(db: Db): Promise<HeldMachine[]> {
  const rows = await db
    .select({ spec: localMachines.spec, gpu: localMachines.gpu })
    .from(localMachines)
    .where(inArray(localMachines.power, ['creating', 'running']));
  return rows.map(({ spec, gpu }) => {
    const s = spec as MachineSpec;
    return { cpu: s.cpu, memoryGb: s.memoryGb, gpuCount: gpu ? s.gpuCount : 0 };
  });
}

export async function readHostOffer(src: HostOfferSources): Promise<HostOffer> {
  const [cards, images, held, diskGb] = await Promise.all([src.cards(), src.images().catch(() => []), src.held(), freeDiskGb(src.dir)]);
  return {
    cpus: src.cpus ?? os.cpus().length,
    memoryGb: Math.floor((src.memoryBytes ?? os.totalmem()) / GIB),
    diskGb,
    gpus: cardsByModel(cards),
    images: [...new Set(images)].sort(),
    hostOs: parseOsRelease(src.osRelease ?? readOsRelease()),
    held: {
      cpu: held.reduce((n, m) => n + m.cpu, 0),
      memoryGb: held.reduce((n, m) => n + m.memoryGb, 0),
      gpus: held.reduce((n, m) => n + m.gpuCount, 0),
    },
  };
}

function cardsByModel(cards: readonly HostCard[]): HostOffer['gpus'] {
  const byModel = new Map<string, HostOffer['gpus'][number]>();
  for (const c of cards) {
    const entry = byModel.get(c.model) ?? { model: c.model, memoryMb: c.memoryMb, count: 0 };
    entry.count++;
    byModel.set(c.model, entry);
  }
  return [...byModel.values()];
}

async function freeDiskGb(dir: string): Promise<number> {
  try {
    const s = await statfs(dir);
    return Math.floor((s.bavail * s.bsize) / GIB);
  } catch {
    return 0;
  }
}

function readOsRelease(): string {
  for (const file of ['/etc/os-release', '/usr/lib/os-release']) {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      // the next one
    }
  }
  return '';
}

/** PRETTY_NAME, ID and VERSION_ID of an os-release text (shell-style assignments, values maybe quoted). */
export function parseOsRelease(text: string): HostOffer['hostOs'] {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) fields.set(m[1]!, m[2]!.replace(/^(["'])(.*)\1$/, '$2'));
  }
  const id = fields.get('ID') ?? '';
  const versionId = fields.get('VERSION_ID') ?? '';
  return { name: fields.get('PRETTY_NAME') ?? (`${id} ${versionId}`.trim() || '未知系统'), id, versionId };
}
