/**
 * Which notebook a machine gets: found as `python3 -m notebook` (Debian's python3-notebook has no
 * jupyter-notebook command), started with the options of its version. The notebook answering
 * through the console's proxy is machine-proxy.sandbox.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { lacks } from '../../../../test/host-packages.js';
import { hostNotebook, notebookArgs, notebookOf } from './notebook.js';

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
});
