/** vitest global setup of the server suites: the migrated PGlite template every test database loads (pglite-template.ts). */
import { ensureTemplate, TEMPLATE_ENV } from './pglite-template.js';

export default async function setup() {
  // On PostgreSQL (npm run test:pg) every test database is a scratch database instead.
  if (process.env.TEST_DATABASE_URL) return;
  // Workers are started after this and inherit the environment.
  process.env[TEMPLATE_ENV] = await ensureTemplate();
}
