/**
 * A web terminal's echo round trip through the console and a compute agent against the agent's own
 * (issue 31 §3: ≤ 2 ms more at p50). One machine on the real local driver behind an agent server;
 * a key typed and its echo awaited, one at a time:
 *   - the agent's own: the machine's shell under a pty on the agent (what a console on the host
 *     itself runs for its web terminal);
 *   - through console and agent: the console's web terminal shells (modules/access/terminal.ts)
 *     on the agent driver: the console's pty, the bridge, the signed channel, the agent's pty.
 * The browser's WebSocket to the console is the same in both deployments and is left out of both.
 * Skipped where bubblewrap cannot run.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { spawn } from 'node-pty';
import { systemClock } from '../src/clock.js';
import { openDatabase } from '../src/db/client.js';
import { AgentComputeDriver } from '../src/drivers/compute/agent.js';
import { computeAgentServer } from '../src/drivers/compute/agent-server.js';
import { LocalComputeDriver } from '../src/drivers/compute/local/driver.js';
import { bwrapWorks } from '../src/drivers/compute/local/sandbox.js';
import { Terminals } from '../src/modules/access/terminal.js';
import { machineSpec } from '../test/machine-spec.js';
import { removeWhenUnmounted } from './cleanup.js';

const KEYS = 300;
const TARGET_ADDED_MS = 2;
const KEY_ID = 'bench';
const SECRET = randomUUID() + randomUUID();

/** Types `KEYS` keys into a shell that runs `cat` (the pty echoes each at once) and times each echo. */
async function echoTimes(write: (data: string) => void, output: { on(fn: (text: string) => void): void }): Promise<number[]> {
  let seen = '';
  let waiter: ((text: string) => void) | null = null;
  output.on((text) => {
    seen += text;
    waiter?.(seen);
  });
  const until = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${re} in ${JSON.stringify(seen.slice(-200))}`)), 15_000);
      const check = (text: string) => {
        if (!re.test(text)) return;
        clearTimeout(timer);
        waiter = null;
        seen = '';
        resolve();
      };
      waiter = check;
      check(seen);
    });
  write('stty -echoctl; exec cat\r');
  await new Promise((r) => setTimeout(r, 1000)); // the login shell's prompt, the exec
  seen = '';
  const times: number[] = [];
  for (let i = 0; i < KEYS; i++) {
    const key = i % 2 ? 'y' : 'x';
    const t0 = performance.now();
    const echoed = until(new RegExp(key));
    write(key);
    await echoed;
    times.push(performance.now() - t0);
    if (i % 100 === 99) {
      write('\r'); // a line for cat, so the pty's line never fills
      await until(/\n[^\n]*\n/);
    }
  }
  return times;
}

function p50(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Prints both p50s and the added ms; returns whether the target was missed. */
export async function benchAgentEcho(): Promise<boolean> {
  const bwrap = bwrapWorks();
  if (!bwrap.ok) {
    console.log(`\nterminal echo through console and agent: skipped (${bwrap.why})`);
    return false;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'console-bench-agent-'));
  chmodSync(dir, 0o711);
  const database = await openDatabase({ dataDir: path.join(dir, 'db') });
  const local = new LocalComputeDriver({
    db: database.db,
    clock: systemClock,
    log: () => {},
    dir: path.join(dir, 'local-compute'),
    sshHost: '127.0.0.1',
    sshPort: () => 22,
  });
  const agent = Fastify({ logger: false });
  await agent.register(computeAgentServer, { driver: local, keys: { [KEY_ID]: SECRET } });
  await agent.listen({ port: 0, host: '127.0.0.1' });
  const driver = new AgentComputeDriver({ baseUrl: `http://127.0.0.1:${(agent.server.address() as { port: number }).port}`, keyId: KEY_ID, secret: SECRET });
  try {
    const id = randomUUID();
    await local.submit(randomUUID(), id, { kind: 'create', params: machineSpec() });
    for (let i = 0; i < 200 && !local.runningIds().includes(id); i++) {
      await local.settled();
      await new Promise((r) => setTimeout(r, 50));
    }
    await driver.refreshChannel();

    const line = local.shell(id)!;
    const own = spawn(line.file, line.args, { name: 'xterm-256color', cols: 80, rows: 24, env: line.env });
    const ownTimes = await echoTimes((d) => own.write(d), { on: (fn) => own.onData(fn) });
    own.kill();

    const terminals = new Terminals(driver);
    let sink: (text: string) => void = () => {};
    // Promise.resolve: whether opening a shell answers at once or after counting the user's shells.
    const shell = await Promise.resolve(terminals.open(id, 'bench', { cols: 80, rows: 24 }, { output: (b) => sink(b.toString()), ended: () => {} }));
    const viaTimes = await echoTimes((d) => terminals.input(shell.id, d), { on: (fn) => (sink = fn) });
    terminals.close({ id: shell.id }, 'bench over');

    const ownP50 = p50(ownTimes);
    const viaP50 = p50(viaTimes);
    const added = viaP50 - ownP50;
    const missed = added > TARGET_ADDED_MS;
    console.log(
      `\nterminal echo (${KEYS} keys, one at a time): the agent's own p50 ${ownP50.toFixed(2)} ms; through console and agent p50 ${viaP50.toFixed(2)} ms; added ${added.toFixed(2)} ms, target ≤ ${TARGET_ADDED_MS} ms ${missed ? 'MISSED' : 'met'}`,
    );
    return missed;
  } finally {
    await driver.shutdown();
    await agent.close();
    await local.shutdown();
    await database.close();
    await removeWhenUnmounted(dir);
  }
}

/** `npx tsx server/bench/agent-echo.ts`: this case alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  benchAgentEcho().then(
    (missed) => process.exit(missed ? 1 : 0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
