/**
 * The embedded database has one owner process. `npm start` says where it runs and how a local
 * command may talk to it in DATA_DIR/server.json (readable by this machine's user only).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface RunningServer {
  pid: number;
  url: string;
  token: string;
}

const fileOf = (dataDir: string) => path.join(dataDir, 'server.json');

export function announceServer(dataDir: string, port: number): RunningServer & { remove(): void } {
  const info = { pid: process.pid, url: `http://127.0.0.1:${port}`, token: randomBytes(32).toString('base64url') };
  writeFileSync(fileOf(dataDir), JSON.stringify(info), { mode: 0o600 });
  return { ...info, remove: () => rmSync(fileOf(dataDir), { force: true }) };
}

/** The server recorded in DATA_DIR, if its process is still alive. */
export function readRunningServer(dataDir: string): RunningServer | null {
  const file = fileOf(dataDir);
  if (!existsSync(file)) return null;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as RunningServer;
    process.kill(info.pid, 0); // throws when no such process
    return info;
  } catch {
    return null;
  }
}
