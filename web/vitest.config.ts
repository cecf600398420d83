import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The browser's zone must not show through: the console shows Beijing time everywhere, and a test
// run in UTC (a zone 8 hours off Beijing) catches any time formatted in the browser's zone.
process.env.TZ = 'UTC';

/**
 * Tests of plain logic (no page, no document): in Node, without a jsdom window and the page setup (antd,
 * Testing Library, antd's stylesheet), which took ten times their tests' own time per file.
 */
const LOGIC_TESTS = [
  'src/components/Price.test.ts',
  'src/features/market/utils/purchaseQuery.test.ts',
  'src/features/market/utils/marketQuery.test.ts',
  'scripts/**/*.test.ts',
];

export default defineConfig({
  plugins: [react()],
  test: {
    // Worker threads: with child-process workers, React work a file left scheduled ran after its
    // jsdom window was gone and surfaced as "window is not defined" in the next file.
    pool: 'threads',
    // Vitest's default is one worker fewer than the cores: one worker on a 2-core CI machine, with the other core idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    restoreMocks: true,
    testTimeout: 20_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'pages',
          environment: 'jsdom',
          setupFiles: ['./src/test/setup.ts'],
          include: ['src/**/*.test.{ts,tsx}'],
          exclude: LOGIC_TESTS,
        },
      },
      { extends: true, test: { name: 'logic', environment: 'node', include: LOGIC_TESTS } },
    ],
  },
});
