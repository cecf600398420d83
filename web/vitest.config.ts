import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The browser's zone must not show through: the console shows Beijing time everywhere, and a test
// run in UTC (a zone 8 hours off Beijing) catches any time formatted in the browser's zone.
process.env.TZ = 'UTC';

export default defineConfig({
  plugins: [react()],
  test: {
    environment: 'jsdom',
    // Worker threads: with child-process workers, React work a file left scheduled ran after its
    // jsdom window was gone and surfaced as "window is not defined" in the next file.
    pool: 'threads',
    // Vitest's default is one worker fewer than the cores: one worker on a 2-core CI machine, with the other core idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}', 'scripts/**/*.test.ts'],
    restoreMocks: true,
    testTimeout: 20_000,
  },
});
