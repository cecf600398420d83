/**
 * The web terminal's shells on a pty (a host command standing in for the machine's shell): a shell
 * left by its connection keeps its last output for the next one, and says how much it could not keep.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { Terminals, type TerminalSink } from './terminal.js';

const printing = (bytes: number) =>
  ({ shell: () => ({ file: '/bin/sh', args: ['-c', `head -c ${bytes} /dev/zero | tr '\\0' x; sleep 30`], env: {} }) }) as unknown as ComputeDriver;

function collector(): TerminalSink & { got: () => number } {
  let got = 0;
  return { output: (d) => (got += d.length), ended: () => {}, got: () => got };
}

describe('terminal shells', () => {
  it('replays what a detached shell printed within its scrollback, and counts what it could not keep', async () => {
    const terminals = new Terminals(printing(20_000), { scrollbackBytes: 4096 });
    const first = collector();
    const { id } = await terminals.open('inst', 'user', { cols: 80, rows: 24 }, first);
    terminals.detach(id, first);
    const second = collector();
    let resumed: ReturnType<Terminals['resume']> = null;
    await vi.waitFor(
      () => {
        resumed = terminals.resume(id, 'inst', 'user', 0, { cols: 80, rows: 24 }, collector());
        expect(resumed!.offset).toBe(20_000);
      },
      { timeout: 5000, interval: 50 },
    );
    // The last resume is the one that counts: it got the kept tail, and the rest is reported lost.
    const final = terminals.resume(id, 'inst', 'user', 0, { cols: 80, rows: 24 }, second)!;
    expect(second.got() + final.lost).toBe(20_000);
    expect(final.lost).toBeGreaterThan(20_000 - 4096 - 4096);
    // A client that saw everything up to the kept part loses nothing.
    const third = collector();
    expect(terminals.resume(id, 'inst', 'user', 20_000, { cols: 80, rows: 24 }, third)!.lost).toBe(0);
    expect(third.got()).toBe(0);
    terminals.stop();
  });

  it('ends a shell waiting for a reattach when told to end the detached ones, and tells whoever watched it', async () => {
    const terminals = new Terminals(printing(10), {});
    const sink = collector();
    const { id } = await terminals.open('inst', 'user', { cols: 80, rows: 24 }, sink);
    // Attached: a close of the detached ones leaves it.
    terminals.close({ id, detached: true }, 'logged out');
    expect(terminals.size).toBe(1);
    const leftWaiting = vi.fn();
    expect(terminals.detach(id, sink, leftWaiting)).toBe(true);
    terminals.close({ id, detached: true }, 'logged out');
    expect(terminals.size).toBe(0);
    expect(leftWaiting).toHaveBeenCalledTimes(1);
  });
});
