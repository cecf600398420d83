import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import globals from 'globals';
import consoleRules from './server/lint/module-boundaries.js';

const root = path.dirname(fileURLToPath(import.meta.url));

/**
 * The web console is organised by feature (web/src/features/<area>): a feature reaches another only
 * through its index.ts, so each can be reorganised without touching the rest; shared code (api,
 * components, layouts, session…) never reaches into a feature, the route table composes them.
 */
const webSrc = `${root}/web/src`;
const webFeatures = fs
  .readdirSync(`${webSrc}/features`, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const webFeatureZones = [
  ...webFeatures.map((feature) => ({
    target: `${webSrc}/features/${feature}/**`,
    from: `${webSrc}/features/!(${feature})/**`,
    except: [`${webSrc}/features/*/index.ts`],
    message: 'Import another feature through its index.ts (its public API), not its insides.',
  })),
  {
    target: `${webSrc}/!(features|routes.tsx|routes.test.tsx)/**`,
    from: `${webSrc}/features/**`,
    message: 'Shared code must not depend on a feature: move what both use to shared code.',
  },
];

export default tseslint.config(
  { ignores: ['**/dist/**', 'web/.dist-*/**', '**/node_modules/**', 'data/**', 'server/drizzle/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { 'import-x': importX, console: consoleRules },
    settings: {
      // no-cycle reads the imported files too: it must parse TypeScript.
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [
        createTypeScriptImportResolver({
          noWarnOnMultipleProjects: true,
          project: ['contract', 'server', 'web', 'e2e'].map((p) => `${root}/${p}/tsconfig.json`),
        }),
      ],
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // DESIGN.md: a module owns its tables, exposes one entry, and packages depend one way.
      'console/module-boundaries': ['error', { root }],
      // Type-only imports do not run, so they cannot form a cycle at load time.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // A type import is a dependency too: the server's modules are layered, not one knot (tests may import anything).
    files: ['server/src/**/*.ts'],
    ignores: ['server/src/**/*.test.ts'],
    rules: { 'console/no-cycle': ['error', { root }] },
  },
  {
    files: ['web/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
      'import-x/no-restricted-paths': ['error', { zones: webFeatureZones }],
    },
  },
);
