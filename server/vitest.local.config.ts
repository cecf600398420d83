import { defineConfig } from 'vitest/config';

/**
 * The local compute driver and what reaches into its machines, on real bubblewrap sandboxes (Debian
 * package `bubblewrap`; .ci/run installs it): the driver's folder and every `*.sandbox.test.ts`. A test
 * that cannot run for want of a Debian package is skipped here and fails under CI (test/host-packages.ts).
 */
export default defineConfig({
  test: {
    include: ['src/drivers/compute/local/**/*.test.ts', 'src/**/*.sandbox.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One migrated PGlite made before the workers start, loaded by every in-memory test database.
    globalSetup: ['test/global-setup.ts'],
    // Cheap password hashes everywhere but the file that measures them (test/setup.ts).
    setupFiles: ['test/setup.ts'],
  },
});
