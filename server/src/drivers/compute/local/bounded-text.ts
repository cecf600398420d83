/**
 * What the console keeps of a stream a sandbox can write to: the last `limit` bytes, the rest read
 * and dropped. A machine's root can reach such a pipe (an error output of a helper, a command's
 * output) and write without end; keeping every byte would end the console (a string past V8's
 * limit) or its memory (issue 28).
 */
import type { Readable } from 'node:stream';

/** A few KB: enough for the error message of a tool that failed. */
export const ERROR_TEXT_LIMIT = 4096;

export class BoundedText {
  private chunks: Buffer[] = [];
  private length = 0;
  /** Whether bytes were dropped from the start. */
  cut = false;

  constructor(private readonly limit = ERROR_TEXT_LIMIT) {}

  push(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.chunks.push(bytes);
    this.length += bytes.length;
    // Compacted once twice the limit is held: each byte is copied a bounded number of times.
    if (this.length > 2 * this.limit) this.compact();
  }

  /** The kept text (a character cut at the start is dropped). */
  toString(): string {
    this.compact();
    const text = Buffer.concat(this.chunks).toString();
    return this.cut ? text.replace(/^\uFFFD+/, '') : text;
  }

  private compact(): void {
    if (this.length <= this.limit) return;
    const all = Buffer.concat(this.chunks);
    // A copy, so that the big chunks it came from are not kept alive by a view into them.
    this.chunks = [Buffer.from(all.subarray(all.length - this.limit))];
    this.length = this.limit;
    this.cut = true;
  }
}

/** Reads `stream` to its end, keeping its last `limit` bytes (BoundedText). */
export function keepTail(stream: Readable | null | undefined, limit = ERROR_TEXT_LIMIT): BoundedText {
  const text = new BoundedText(limit);
  stream?.on('data', (c: Buffer) => text.push(c));
  return text;
}
