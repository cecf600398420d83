import { createReadStream } from 'node:fs';
import { mkdir, rm, stat, writeFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { assertSafeKey, type StorageDriver } from './types.js';

/** Files under a folder; the content type is kept beside each file. */
export class LocalStorageDriver implements StorageDriver {
  readonly name = 'local';
  constructor(private root: string) {}

  private file(key: string) {
    assertSafeKey(key);
    return path.join(this.root, key);
  }

  async put(key: string, body: Buffer, contentType: string) {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, body);
    await writeFile(`${file}.type`, contentType);
  }

  async get(key: string) {
    const file = this.file(key);
    try {
      const [info, contentType] = await Promise.all([stat(file), readFile(`${file}.type`, 'utf8')]);
      return { body: createReadStream(file), contentType, size: info.size };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async delete(key: string) {
    const file = this.file(key);
    await rm(file, { force: true });
    await rm(`${file}.type`, { force: true });
  }
}
