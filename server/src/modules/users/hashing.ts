/**
 * Where password hashes run, so that a burst of logins does not stall every other request.
 *
 * One scrypt hash (N=2^15) holds a core for tens of milliseconds. Node would run it on libuv's
 * thread pool, four threads that also serve file work and WebCrypto: fifty logins at once take
 * every pool thread and, on a two-core machine, every core, and the GPU market's p99 went from
 * 10 ms to 1.8 s. So:
 * - hashes take turns: at most `concurrency` at once (default: one core fewer than the machine
 *   has, at least one); the rest wait in line, and a hash that would find more than `queue`
 *   waiting is refused at once with AUTH_BUSY (503) rather than answered after many seconds;
 * - each runs on a worker thread of its own, off the thread pool, at the lowest CPU priority
 *   Linux has (SCHED_IDLE by `chrt`, else nice 19): when the cores are busy the event loop serving
 *   everyone else goes first and takes the core back the moment it wakes, and when they are idle a
 *   hash takes as long as it always did. At nice 10 the GPU market's p99 during fifty logins was
 *   2–3× its idle p99, at SCHED_IDLE about 1.1–1.5× (npm run bench). The price: on a machine whose
 *   cores stay saturated, logins wait (the bounded line then answers AUTH_BUSY).
 * Known and unknown accounts wait alike, so the line tells nothing about which accounts exist.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ScryptOptions } from 'node:crypto';
import { AppError } from '../../http/errors.js';

/** A counting semaphore with a bounded line; a finished task hands its slot straight to the next in line. */
export class Turns {
  private running = 0;
  private line: (() => void)[] = [];

  constructor(
    private concurrency: number,
    private queue: number,
  ) {}

  /** Refuses now when a task would be refused anyway, before the caller spends anything on it. */
  assertRoom() {
    if (this.running >= this.concurrency && this.line.length >= this.queue) throw new AppError('AUTH_BUSY');
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.enter();
    try {
      return await task();
    } finally {
      this.leave();
    }
  }

  private async enter() {
    if (this.running < this.concurrency) {
      this.running++;
      return;
    }
    if (this.line.length >= this.queue) throw new AppError('AUTH_BUSY');
    await new Promise<void>((resolve) => this.line.push(resolve));
  }

  private leave() {
    const next = this.line.shift();
    if (next) next();
    else this.running--;
  }
}

interface ScryptJob {
  password: string;
  salt: Buffer;
  keyLength: number;
  options: ScryptOptions;
}

/**
 * The worker's program (CommonJS, evaluated: no file to resolve under tsx, vitest or plain node).
 * setpriority and sched_setscheduler on a thread id change that thread alone on Linux; elsewhere the
 * hash runs at normal priority.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, 19);
  require('node:child_process').execFileSync('chrt', ['--idle', '-p', '0', String(tid)], { stdio: 'ignore', timeout: 2000 });
} catch {}
parentPort.on('message', (job) => {
  try {
    parentPort.postMessage({ key: scryptSync(job.password, job.salt, job.keyLength, job.options) });
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message || e) });
  }
});
`;

export interface HashLimits {
  concurrency: number;
  queue: number;
}

export class Hasher {
  private turns: Turns;
  private idle: Worker[] = [];

  constructor(private limits: HashLimits) {
    this.turns = new Turns(limits.concurrency, limits.queue);
  }

  /** New limits for the hashes that start from now on; the workers are kept. */
  limit(limits: HashLimits) {
    if (limits.concurrency === this.limits.concurrency && limits.queue === this.limits.queue) return;
    this.limits = limits;
    this.turns = new Turns(limits.concurrency, limits.queue);
  }

  assertRoom() {
    this.turns.assertRoom();
  }

  scrypt(job: ScryptJob): Promise<Buffer> {
    return this.turns.run(() => this.inWorker(job));
  }

  /** Turns keep at most `concurrency` jobs here, so at most that many workers ever exist. */
  private async inWorker(job: ScryptJob): Promise<Buffer> {
    const worker = this.idle.pop() ?? new Worker(WORKER_SOURCE, { eval: true });
    try {
      const key = await hashIn(worker, job);
      this.idle.push(worker);
      return key;
    } catch (e) {
      void worker.terminate();
      throw e;
    }
  }
}

/** One job on one worker; the worker keeps the process alive only while it is hashing. */
function hashIn(worker: Worker, job: ScryptJob): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = () => {
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      worker.unref();
    };
    const onMessage = (m: { key?: Uint8Array; error?: string }) => {
      done();
      if (m.key) resolve(Buffer.from(m.key));
      else reject(new Error(`scrypt: ${m.error}`));
    };
    const onError = (e: Error) => {
      done();
      reject(e);
    };
    const onExit = (code: number) => {
      done();
      reject(new Error(`scrypt worker exited with ${code}`));
    };
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    worker.ref();
    worker.postMessage(job);
  });
}

export const DEFAULT_HASH_LIMITS: HashLimits = { concurrency: Math.max(1, availableParallelism() - 1), queue: 64 };
