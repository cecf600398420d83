import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseOsRelease, readHostOffer } from './host-offer.js';

const DEBIAN = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
`;

describe('what this host offers', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'host-offer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('counts its cards by model, its images once, and what the running machines hold', async () => {
    const offer = await readHostOffer({
      dir,
      cpus: 16,
      memoryBytes: 64 * 1024 ** 3,
      osRelease: DEBIAN,
      cards: () => [
        { model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
        { model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
        { model: 'NVIDIA L20', memoryMb: 46068 },
      ],
      images: async () => ['console/pytorch:1.13.1-cpu', 'console/base:12', 'console/base:12'],
      held: async () => [
        { cpu: 4, memoryGb: 16, gpuCount: 1 },
        { cpu: 2, memoryGb: 4, gpuCount: 0 },
      ],
    });
    expect(offer).toMatchObject({
      cpus: 16,
      memoryGb: 64,
      gpus: [
        { model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564, count: 2 },
        { model: 'NVIDIA L20', memoryMb: 46068, count: 1 },
      ],
      images: ['console/base:12', 'console/pytorch:1.13.1-cpu'],
      hostOs: { name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' },
      held: { cpu: 6, memoryGb: 20, gpus: 1 },
    });
    expect(offer.diskGb).toBeGreaterThanOrEqual(0);
  });

  it('reads this machine when not told otherwise; no image layout readable is no images', async () => {
    const offer = await readHostOffer({
      dir,
      cards: () => [],
      images: () => Promise.reject(new Error('no layout')),
      held: async () => [],
    });
    expect(offer.cpus).toBeGreaterThan(0);
    expect(offer.memoryGb).toBeGreaterThan(0);
    expect(offer.gpus).toEqual([]);
    expect(offer.images).toEqual([]);
    expect(offer.hostOs.name).not.toBe('');
  });

  it('parses os-release with and without quotes, falling back to ID and VERSION_ID for a name', () => {
    expect(parseOsRelease(DEBIAN)).toEqual({ name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', versionId: '12' });
    expect(parseOsRelease("ID='ubuntu'\nVERSION_ID=22.04\n")).toEqual({ name: 'ubuntu 22.04', id: 'ubuntu', versionId: '22.04' });
    expect(parseOsRelease('')).toEqual({ name: '未知系统', id: '', versionId: '' });
  });
});
