/**
 * A throw-away database on a PostgreSQL server (tests against PostgreSQL, benches): created under a
 * random name from an admin URL, dropped (even with open connections) when done.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export async function createScratchDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await onAdmin(adminUrl, `create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onAdmin(adminUrl, `drop database if exists ${name} with (force)`) };
}

async function onAdmin(adminUrl: string, statement: string) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}
