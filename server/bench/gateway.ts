/**
 * The model gateway's cost (issue 14): the same streaming chat, 50 connections at once, sent once
 * straight to an upstream and once through the console's /v1 gateway in front of that upstream. The
 * upstream is the embedded model served over HTTP in its own process (bench/upstream.ts); the
 * gateway routes to it as an `openai` channel, and holds, settles and logs every call as in
 * production (API key, ledger hold and settle, call row).
 *
 * Printed: requests per second of each and their ratio (target ≥ 0.8), and what the gateway adds to
 * the time to first byte and to the whole answer at p50 / p99 (target < 1 ms added at p50).
 * BENCH_GATEWAY_CONNECTIONS changes the 50 connections (1 shows the cost of the hop alone).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Agent, request } from 'node:http';
import { login, startServer } from './http.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_GATEWAY_CONNECTIONS ?? 50);
/**
 * The upstream's pace: an answer of MAX_TOKENS tokens takes MAX_TOKENS / TPS seconds. 50 tokens per
 * second is what hosted chat models stream at; a faster pace makes the load generator and the
 * upstream, not the gateway, what the machine's cores are busy with.
 */
const UPSTREAM_TPS = 50;
const MAX_TOKENS = 32;
const TARGET = { addedP50Ms: 1, ratio: 0.8 };

interface Sample {
  firstByteMs: number;
  totalMs: number;
  /** The gateway's own time before it asked the upstream (its x-gateway-overhead-ms header). */
  overheadMs: number;
}

/** A bench process (bench/upstream.ts, bench/proxy.ts) that prints its base URL on its first line. */
async function startProcess(file: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(file, import.meta.url).pathname], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
  return { baseUrl: (JSON.parse(first) as { baseUrl: string }).baseUrl, stop: () => child.kill('SIGTERM') };
}

/** The shipped catalogue with one channel: the benchmark's upstream, serving qwen-mini-sim as bench-chat. */
function catalogueWithUpstream(dir: string, baseUrl: string): string {
  const file = new URL('../catalogue/catalogue.json', import.meta.url).pathname;
  const data = JSON.parse(readFileSync(file, 'utf8')) as { modelChannels: unknown[] };
  data.modelChannels = [
    {
      id: 'bench',
      kind: 'openai',
      baseUrl,
      apiKey: 'bench-upstream-key',
      models: ['qwen-mini-sim'],
      modelMap: { 'qwen-mini-sim': 'bench-chat' },
      priority: 0,
      weight: 1,
      enabled: true,
    },
  ];
  const out = path.join(dir, 'catalogue.json');
  writeFileSync(out, JSON.stringify(data));
  return out;
}

/** One streamed chat: when its first byte came, and when it ended. */
function streamOnce(agent: Agent, url: URL, body: string, bearer: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstByte = 0;
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => reject(new Error(`${url.href} answered ${res.statusCode}: ${text.slice(0, 300)}`)));
          return;
        }
        res.on('data', () => {
          if (!firstByte) firstByte = performance.now();
        });
        const overheadMs = Number(res.headers['x-gateway-overhead-ms'] ?? 0);
        res.on('end', () => resolve({ firstByteMs: firstByte - started, totalMs: performance.now() - started, overheadMs }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** CONNECTIONS loops sending streamed chats for `seconds`; every answer is a sample. */
async function load(baseUrl: string, model: string, bearer: string, seconds: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const url = new URL(`${baseUrl}/chat/completions`);
  const body = JSON.stringify({
    model,
    messages: [{ role: 'user', content: '用一句话介绍 GPU 云服务器' }],
    max_tokens: MAX_TOKENS,
    stream: true,
    stream_options: { include_usage: true },
  });
  const samples: Sample[] = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) samples.push(await streamOnce(agent, url, body, bearer));
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  return { rps: samples.length / elapsed, samples };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function createKey(base: string, token: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/model/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench' }),
  });
  if (!res.ok) throw new Error(`bench key: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { secret: string }).secret;
}

/** Runs the comparison on a fresh PGlite server (or `databaseUrl`); returns the targets missed. */
export async function benchGateway(databaseUrl?: string): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'console-bench-gw-'));
  const upstream = await startProcess('./upstream.ts', { BENCH_UPSTREAM_TPS: String(UPSTREAM_TPS) });
  const proxy = await startProcess('./proxy.ts', { BENCH_PROXY_TARGET: upstream.baseUrl });
  const server = await startServer(databaseUrl, {
    CATALOGUE_FILE: catalogueWithUpstream(dir, upstream.baseUrl),
    BENCH_DATA_DIR: path.join(dir, 'data'),
    BENCH_FUND_DEMO_YUAN: '100000',
  });
  try {
    const key = await createKey(server.base, await login(server.base));
    const gateway = `${server.base}/v1`;
    // Warm up both paths (JIT, connections, the router's channel list).
    await load(upstream.baseUrl, 'bench-chat', 'bench-upstream-key', 1);
    await load(gateway, 'qwen-mini-sim', key, 1);
    await load(proxy.baseUrl, 'bench-chat', 'bench-upstream-key', 1);
    const direct = await load(upstream.baseUrl, 'bench-chat', 'bench-upstream-key', SECONDS);
    const bare = await load(proxy.baseUrl, 'bench-chat', 'bench-upstream-key', SECONDS);
    const through = await load(gateway, 'qwen-mini-sim', key, SECONDS);

    const stat = (r: typeof direct, f: keyof Sample, p: number) =>
      percentile(
        r.samples.map((s) => s[f]),
        p,
      );
    const added = (f: keyof Sample, p: number, r = through) => stat(r, f, p) - stat(direct, f, p);
    const ratio = through.rps / direct.rps;
    const addedP50 = added('totalMs', 50);
    console.log(
      `\nmodel gateway (${server.database}): streamed chat, ${MAX_TOKENS} tokens at ${UPSTREAM_TPS} tokens/s, ${CONNECTIONS} connections, ${SECONDS} s each`,
    );
    const line = (name: string, r: typeof direct) =>
      console.log(
        `  ${name.padEnd(26)} ${r.rps.toFixed(0).padStart(6)} req/s   first byte p50 ${stat(r, 'firstByteMs', 50).toFixed(2)} ms p99 ${stat(r, 'firstByteMs', 99).toFixed(2)} ms   whole p50 ${stat(r, 'totalMs', 50).toFixed(2)} ms p99 ${stat(r, 'totalMs', 99).toFixed(2)} ms`,
      );
    line('upstream directly', direct);
    line('through a bare proxy', bare);
    line('through the gateway', through);
    const missedRatio = ratio < TARGET.ratio;
    const missedLatency = addedP50 >= TARGET.addedP50Ms;
    console.log(
      `  added by the gateway: first byte p50 ${added('firstByteMs', 50).toFixed(2)} ms p99 ${added('firstByteMs', 99).toFixed(2)} ms; whole answer p50 ${addedP50.toFixed(2)} ms${missedLatency ? ` (MISSED: target < ${TARGET.addedP50Ms} ms)` : ''} p99 ${added('totalMs', 99).toFixed(2)} ms`,
    );
    console.log(
      `  the gateway's own time before asking the upstream (auth, hold): p50 ${stat(through, 'overheadMs', 50).toFixed(2)} ms p99 ${stat(through, 'overheadMs', 99).toFixed(2)} ms`,
    );
    console.log(
      `  for comparison, a bare pass-through proxy (no auth, no money) adds: first byte p50 ${added('firstByteMs', 50, bare).toFixed(2)} ms; whole answer p50 ${added('totalMs', 50, bare).toFixed(2)} ms; throughput ratio ${(bare.rps / direct.rps).toFixed(2)}`,
    );
    console.log(`  throughput ratio ${ratio.toFixed(2)}${missedRatio ? ` (MISSED: target ≥ ${TARGET.ratio})` : ` (target ≥ ${TARGET.ratio})`}`);
    return Number(missedRatio) + Number(missedLatency);
  } finally {
    await server.stop();
    proxy.stop();
    upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchGateway(process.env.DATABASE_URL).then(
    (missed) => process.exit(missed ? 1 : 0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
