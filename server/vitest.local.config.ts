import { defineConfig } from 'vitest/config';

/** The local compute driver on real bubblewrap sandboxes (Debian package `bubblewrap`; .ci/run installs it). */
export default defineConfig({
  test: {
    include: ['src/drivers/compute/local/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
