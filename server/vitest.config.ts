import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // ../deploy: the deployment's offline checks (deploy/deploy.test.ts: the Kubernetes manifests, the image's modules).
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'lint/**/*.test.ts', '../deploy/**/*.test.ts'],
    // Real sandboxes need bubblewrap, which a fresh machine lacks: their own suite (vitest.local.config.ts, npm run test:local).
    // test/deployed: three server processes behind HAProxy, their own suite (vitest.deployed.config.ts, npm run test:deployed).
    exclude: ['**/node_modules/**', 'src/drivers/compute/local/**', 'src/**/*.sandbox.test.ts', 'test/deployed/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once even on a 2-core machine (vitest's default there is one): a file's time is
    // much waiting (timers, sockets, child processes), so one worker left a core idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // One migrated PGlite made before the workers start, loaded by every in-memory test database.
    globalSetup: ['test/global-setup.ts'],
    // Cheap password hashes everywhere but the file that measures them (test/setup.ts).
    setupFiles: ['test/setup.ts'],
  },
});
