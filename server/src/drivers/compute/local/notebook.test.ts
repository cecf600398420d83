/**
 * Which notebook a machine gets: found as `python3 -m notebook` (Debian's python3-notebook has no
 * jupyter-notebook command), started with the options of its version. The notebook answering
 * through the console's proxy is machine-proxy.sandbox.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lacks } from '../../../../test/host-packages.js';
import { hostNotebook, imageNotebook, notebookArgs, notebookOf } from './notebook.js';

const ID = '0b5c9a8e-0000-4000-8000-000000000001';

describe('the notebook of local machines', () => {
  it('is what `python3 -m notebook --version` answers, from 6.1 (Unix sockets) on', () => {
    expect(notebookOf({ status: 0, stdout: '6.4.12\n' })).toEqual({ version: '6.4.12', major: 6 });
    expect(notebookOf({ status: 0, stdout: '7.2.2\n' })).toEqual({ version: '7.2.2', major: 7 });
    // A warning printed before the version does not hide it.
    expect(notebookOf({ status: 0, stdout: 'some warning\n7.0.0\n' })).toMatchObject({ major: 7 });
    expect(notebookOf({ status: 1, stdout: '' })).toBeNull();
    expect(notebookOf({ status: null, stdout: null })).toBeNull();
    expect(notebookOf({ status: 0, stdout: '6.0.3\n' })).toBeNull();
    expect(notebookOf({ status: 0, stdout: 'No module named notebook\n' })).toBeNull();
  });

  it("speaks notebook 6's options to notebook 6 and jupyter_server's to notebook 7", () => {
    const six = notebookArgs({ version: '6.4.12', major: 6 }, ID, 'tok');
    expect(six.slice(0, 3)).toEqual(['/usr/bin/python3', '-m', 'notebook']);
    expect(six).toEqual(
      expect.arrayContaining([
        '--sock=/run/jupyter.sock',
        `--NotebookApp.base_url=/jupyter/${ID}/`,
        '--NotebookApp.token=tok',
        '--NotebookApp.allow_remote_access=True',
      ]),
    );
    expect(six.some((a) => a.startsWith('--ServerApp') || a.startsWith('--IdentityProvider'))).toBe(false);

    const seven = notebookArgs({ version: '7.2.2', major: 7 }, ID, 'tok');
    expect(seven).toEqual(
      expect.arrayContaining([
        '--sock=/run/jupyter.sock',
        `--ServerApp.base_url=/jupyter/${ID}/`,
        '--IdentityProvider.token=tok',
        '--ServerApp.allow_remote_access=True',
      ]),
    );
    expect(seven.some((a) => a.startsWith('--NotebookApp'))).toBe(false);
  });

  it.skipIf(lacks('python3-notebook'))("is found on this host, where Debian's python3-notebook is installed", () => {
    expect(hostNotebook()).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+/) });
  });

  describe("in an image's rootfs (machines booting from OCI images)", () => {
    const images = mkdtempSync(path.join(tmpdir(), 'console-notebook-image-'));
    afterAll(() => rmSync(images, { recursive: true, force: true }));
    /** A rootfs with a python3 (a link, as Debian has it) and, where given, a package's metadata folder. */
    const rootfs = (name: string, python: boolean, packageDir?: string) => {
      const root = path.join(images, name);
      mkdirSync(path.join(root, 'usr', 'bin'), { recursive: true });
      if (python) {
        writeFileSync(path.join(root, 'usr', 'bin', 'python3.11'), '');
        symlinkSync('python3.11', path.join(root, 'usr', 'bin', 'python3'));
      }
      if (packageDir) mkdirSync(path.join(root, packageDir), { recursive: true });
      return root;
    };

    it("is the version its package's metadata names, with nothing of the image run on the host", () => {
      expect(imageNotebook(rootfs('debian', true, 'usr/lib/python3/dist-packages/notebook-6.4.12.egg-info'))).toEqual({ version: '6.4.12', major: 6 });
      expect(imageNotebook(rootfs('pip', true, 'usr/local/lib/python3.11/dist-packages/notebook-7.2.2.dist-info'))).toEqual({ version: '7.2.2', major: 7 });
    });

    it('is absent without python3, without the package, or older than 6.1', () => {
      expect(imageNotebook(rootfs('no-python', false, 'usr/lib/python3/dist-packages/notebook-6.4.12.egg-info'))).toBeNull();
      expect(imageNotebook(rootfs('no-notebook', true, 'usr/lib/python3/dist-packages/notebook_shim-0.2.3.dist-info'))).toBeNull();
      expect(imageNotebook(rootfs('old', true, 'usr/lib/python3/dist-packages/notebook-6.0.3.egg-info'))).toBeNull();
    });
  });
});
