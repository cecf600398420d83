import { defineConfig } from 'vitest/config';

/**
 * The console as deployed (test/deployed/): three server processes behind Debian's HAProxy on
 * PostgreSQL, Redis and an S3 server. One file, one worker: the processes it starts are the load.
 * TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) is the admin URL its scratch
 * databases are made from.
 */
export default defineConfig({
  test: {
    include: ['test/deployed/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 1,
    // The cases run in order on one cluster: the later ones kill and stop replicas.
    sequence: { concurrent: false },
  },
});
