/**
 * Which images of the host offer the notebook, the 6006 relay and the desktop, judged from the
 * names in their layers (never unpacked, never run): what a machine whose image lacks a service is
 * told to use instead. Saved images (users' own) are never named.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DESKTOP_PROGRAMS } from './desktop.js';
import { OciLayout } from './oci/layout.js';
import { decidingNames, ServiceImages, servicesOfNames } from './service-images.js';

const NOTEBOOK = ['./usr/bin/python3', './usr/lib/python3/dist-packages/notebook-6.4.12.egg-info/', './usr/lib/python3/dist-packages/notebook/'];

describe('the services an image offers, from its files', () => {
  it('the notebook needs python3 and a notebook of 6.1 or later; the relay python3; the desktop all of its programs; sftp its server', () => {
    expect(servicesOfNames(NOTEBOOK)).toEqual(['jupyter', 'service']);
    expect(servicesOfNames(['usr/bin/python3', 'usr/lib/python3/dist-packages/notebook-5.7.8.egg-info'])).toEqual(['service']);
    expect(servicesOfNames(['usr/local/lib/python3.11/dist-packages/notebook-7.2.1.dist-info', 'usr/bin/python3'])).toEqual(['jupyter', 'service']);
    expect(servicesOfNames(['usr/bin/bash', 'usr/bin/sleep'])).toEqual([]);
    expect(servicesOfNames(DESKTOP_PROGRAMS.map((p) => p.slice(1)))).toEqual(['desktop']);
    expect(servicesOfNames(DESKTOP_PROGRAMS.slice(1).map((p) => p.slice(1)))).toEqual([]);
    expect(servicesOfNames(['./usr/lib/openssh/sftp-server'])).toEqual(['sftp']);
  });

  it('keeps of a layer only the names that decide, and their whiteouts', () => {
    expect(decidingNames(['./usr/bin/bash', ...NOTEBOOK, './usr/bin/.wh.python3', './etc/.wh.passwd'])).toEqual([
      'usr/bin/python3',
      'usr/lib/python3/dist-packages/notebook-6.4.12.egg-info',
      'usr/bin/.wh.python3',
    ]);
  });
});

describe('the images of a host that offer a service', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'service-images-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** A layer of empty files at these paths (folders end in /). */
  function layer(name: string, files: string[]): string {
    const root = path.join(work, name);
    for (const f of files) {
      const at = path.join(root, f);
      if (f.endsWith('/')) mkdirSync(at, { recursive: true });
      else {
        mkdirSync(path.dirname(at), { recursive: true });
        writeFileSync(at, '');
      }
    }
    const tar = path.join(work, `${name}.tar`);
    execFileSync('tar', ['-c', '-f', tar, '-C', root, '.']);
    return tar;
  }

  it('names the images that have it by their title and reference, never a saved image; a later layer that removes python3 counts', async () => {
    const layout = await OciLayout.open(path.join(work, 'oci'));
    const notebookFiles = ['usr/bin/python3', 'usr/lib/python3/dist-packages/notebook-6.4.12.egg-info/'];
    await layout.importImage({
      ref: 'console/base:12',
      layers: [layer('base', notebookFiles)],
      annotations: { 'org.opencontainers.image.title': 'Debian 12 · Python 3.11' },
    });
    await layout.importImage({ ref: 'ops/bare:1', layers: [layer('bare', ['usr/bin/bash'])] });
    await layout.importImage({ ref: 'saved/u-1', base: 'console/base:12', layers: [layer('saved', ['root/a.txt'])] });
    await layout.importImage({ ref: 'ops/no-python:1', base: 'ops/bare:1', layers: [layer('nopy', ['usr/bin/python3'])] });
    await layout.importImage({ ref: 'ops/python-removed:1', base: 'console/base:12', layers: [layer('removed', ['usr/bin/.wh.python3'])] });
    const images = new ServiceImages(async () => layout);
    expect(images.offering('jupyter')).toEqual([]);
    await images.refresh();
    expect(images.offering('jupyter')).toEqual(['Debian 12 · Python 3.11（console/base:12）']);
    expect(images.offering('service')).toEqual(['Debian 12 · Python 3.11（console/base:12）', 'ops/no-python:1']);
    expect(images.offering('desktop')).toEqual([]);
  });
});
