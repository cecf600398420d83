import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'lint/**/*.test.ts'],
    // Real sandboxes need bubblewrap, which a fresh machine lacks: their own suite (vitest.local.config.ts, npm run test:local).
    exclude: ['**/node_modules/**', 'src/drivers/compute/local/**', 'src/**/*.sandbox.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
