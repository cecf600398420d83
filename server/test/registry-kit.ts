/**
 * The operator's registry for tests that move images or machines between hosts: Debian's
 * docker-registry (the CNCF distribution server) on a free loopback port, its storage in a folder of
 * the test's, no login, deletes allowed. `missingRegistryTools` names what the host lacks (skopeo, docker-registry).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { keepTail } from '../src/drivers/compute/local/bounded-text.js';

const REGISTRY = '/usr/bin/docker-registry';

/** What the host lacks of what a registry test needs, a line each naming the Debian package. */
export function missingRegistryTools(): string[] {
  return [...(existsSync('/usr/bin/skopeo') ? [] : ['skopeo (no /usr/bin/skopeo)']), ...(existsSync(REGISTRY) ? [] : [`docker-registry (no ${REGISTRY})`])];
}

export interface TestRegistry {
  url: string;
  stop(): void;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Starts the registry with its storage under `dir`; resolves once it answers. */
export async function startRegistry(dir: string): Promise<TestRegistry> {
  const port = await freePort();
  const config = [
    'version: 0.1',
    'log:',
    '  level: error',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'data')}`,
    // Deletes allowed, as a registry the console cleans up after itself in should be (a migration's artifact).
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '  secret: registry-test-secret',
  ].join('\n');
  writeFileSync(path.join(dir, 'config.yml'), `${config}\n`);
  // Its log is kept for a failure to start only.
  const child: ChildProcess = spawn(REGISTRY, ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = keepTail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const answered = await fetch(`${url}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (answered === 200) return { url, stop: () => child.kill() };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`docker-registry did not answer on its port: ${log.toString()}`);
}
