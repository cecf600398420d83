/**
 * The console as deployed (issue 31 §1 "Tested as deployed"): three replicas (`node --import tsx
 * src/main.ts`) on one PostgreSQL database, objects in an S3 server, counters in Redis, instances on
 * the simulated compute agent, and Debian's HAProxy in front. Every request goes through HAProxy, as
 * a browser's would; the cases run in order on one cluster, the last ones killing and stopping
 * replicas.
 *
 * What "no error" means when a replica dies (kill -9) under load:
 * - a GET is answered 200, every one: HAProxy sends a GET again to another replica when its replica
 *   closed the connection without answering (`retry-on empty-response`), as a browser would retry
 *   it itself; the client here retries nothing;
 * - a live progress stream (SSE) on the dead replica ends once; the page opens it again (what an
 *   EventSource does) and gets the job's state from another replica;
 * - a POST is never sent twice by HAProxy; one in flight on the dead replica may fail (502, or its
 *   connection closed without an answer), and then it changed nothing or it completed once — every trade the gateway took money for ends
 *   credited once, and the balance is exactly what was paid;
 * and when a replica is stopped (SIGTERM, a rolling update), nothing fails at all.
 */
import { randomUUID } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, LORA_JOB_ACTIVE, loraPreset, type LoraJob, type LoraParams } from '@console/contract';
import { multipart, multipartFiles, PNG, pngImage } from '../harness.js';
import { REPLICA_NAMES, startCluster, type Cluster, type ReplicaName } from './cluster.js';
import { Client, EventStream, type Answer } from './client.js';

let cluster: Cluster;
let client: Client;
beforeAll(async () => {
  cluster = await startCluster({
    // The training runner and the progress stream's own look once a minute: what a stream on another
    // replica shows sooner came over the bus (PostgreSQL LISTEN/NOTIFY).
    env: { IMAGE_BACKEND_TICK_MS: '60000', BILLING_TICK_SECONDS: '5' },
  });
  client = new Client(cluster.url);
  console.log(`副本冷启动（秒，三个同时）：${JSON.stringify(cluster.coldStartSeconds)}`);
}, 240_000);
afterAll(async () => cluster?.close(), 60_000);

let mobileSeq = 0;
const newMobile = () => `137${String(Date.now() % 100000).padStart(5, '0')}${String(++mobileSeq).padStart(3, '0')}`;
const fill = (p: string, ...ids: (string | number)[]) => ids.reduce<string>((s, id) => s.replace(/:[a-zA-Z]+/, String(id)), p);
const replicasOf = (answers: Answer[]) => new Set(answers.map((a) => a.replica));

async function query<T>(text: string, values: unknown[] = []): Promise<T[]> {
  const db = new pg.Client({ connectionString: cluster.databaseUrl });
  await db.connect();
  try {
    return (await db.query(text, values)).rows as T[];
  } finally {
    await db.end();
  }
}

/** A certified account with `yuan` of cash, recharged through the sandbox gateway. */
async function payingUser(yuan: string) {
  const u = await client.register(newMobile());
  await client.certify(u.token);
  await client.recharge(u.token, yuan);
  return u;
}

/** A dataset of two images and a queued LoRA job on it (the runner ticks once a minute). */
async function queuedJob(token: string): Promise<LoraJob> {
  const ds = await client.post<{ id: string }>(API.sdDatasets, { name: '训练集', kind: 'person', triggerWord: 'sks' }, token);
  expect(ds.status, ds.text).toBe(200);
  const files = multipartFiles([0, 1].map((i) => ({ name: `img${i}.png`, content: pngImage(32, 32, [200, 20, 20 + i]), type: 'image/png' })));
  const up = await client.request('POST', fill(API.sdDatasetImages, ds.body.id), { token, raw: files.payload, headers: files.headers });
  expect(up.status, up.text).toBe(200);
  const params: LoraParams = { ...loraPreset('person', 'sd15'), repeats: 1, epochs: 1, batchSize: 1 };
  const job = await client.post<LoraJob>(
    API.sdTrainJobs,
    { datasetId: ds.body.id, baseModel: 'sd15', params, name: 'my_lora', requestId: randomUUID() },
    token,
  );
  expect(job.status, job.text).toBe(200);
  return job.body;
}

describe('three replicas behind HAProxy', () => {
  it('spreads requests over the three replicas, round robin', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.get('/readyz')));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(replicasOf(answers)).toEqual(new Set(REPLICA_NAMES));
  });

  it('sessions: signed up on one replica, the same user wherever a request lands; logout ends the session on all', async () => {
    const u = await client.register(newMobile());
    expect(REPLICA_NAMES).toContain(u.replica);
    const seen = await Promise.all(Array.from({ length: 6 }, () => client.get<{ id: string; mobile: string }>(API.meInfo, u.token)));
    expect(seen.map((a) => [a.status, a.body.id])).toEqual(Array(6).fill([200, u.userId]));
    expect(replicasOf(seen)).toEqual(new Set(REPLICA_NAMES));

    // A second sign-in (another browser), then logout in the first.
    const login = await client.post<{ token: string }>(API.login, { account: u.mobile, password: u.password });
    expect(login.status).toBe(200);
    const out = await client.post(API.logout, undefined, u.token);
    expect(out.status).toBe(200);
    const after = await Promise.all(Array.from({ length: 6 }, () => client.get(API.meInfo, u.token)));
    expect(after.map((a) => a.status)).toEqual(Array(6).fill(401));
    expect(replicasOf(after)).toEqual(new Set(REPLICA_NAMES));
    const other = await Promise.all(Array.from({ length: 3 }, () => client.get<{ id: string }>(API.meInfo, login.body.token)));
    expect(other.map((a) => a.body.id)).toEqual(Array(3).fill(u.userId));
  });

  it('uploads: an avatar lands in the S3 server and every replica serves it', async () => {
    const u = await client.register(newMobile());
    const logo = multipart('me.png', PNG, 'image/png');
    const up = await client.request<{ logo: string }>('PUT', API.meLogo, { token: u.token, raw: logo.payload, headers: logo.headers });
    expect(up.status, up.text).toBe(200);
    const served = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const res = await fetch(`${cluster.url}${up.body.logo}`);
        return { status: res.status, replica: res.headers.get('x-replica'), bytes: Buffer.from(await res.arrayBuffer()) };
      }),
    );
    expect(new Set(served.map((s) => s.replica))).toEqual(new Set(REPLICA_NAMES));
    for (const s of served) {
      expect(s.status).toBe(200);
      expect(s.bytes.equals(PNG)).toBe(true);
    }
    // In the S3 server's objects, not on a replica's disk.
    expect(filesHolding(cluster.s3Dir, PNG).length).toBeGreaterThanOrEqual(1);
    for (const r of cluster.replicas.values()) expect(filesHolding(r.dataDir, PNG)).toEqual([]);
  });

  it('payments: a recharge notification delivered to all three replicas credits once', async () => {
    const u = await client.register(newMobile());
    const { outTradeNo } = await client.recharge(u.token, '50');
    const original = cluster.notifications.find((n) => n.body.includes(outTradeNo));
    expect(original).toBeDefined();
    const replays = await Promise.all(
      Array.from({ length: 3 }, () => client.request('POST', original!.path, { headers: original!.headers, raw: Buffer.from(original!.body) })),
    );
    expect(replays.map((r) => r.text)).toEqual(['success', 'success', 'success']);
    expect(replicasOf(replays)).toEqual(new Set(REPLICA_NAMES));
    const money = await client.get<{ cash: string; gift: string }>(API.userMoney, u.token);
    expect(money.body).toMatchObject({ cash: '500000', gift: '90000' });
    const statement = await client.get<{ items: { kind: string }[] }>(`${API.userStatement}?kind=cash`, u.token);
    expect(statement.body.items.filter((e) => e.kind === 'gateway_in')).toHaveLength(1);
  });

  it('payments: 30 post-paid orders at once on a small balance start as many instances as it carries, never more', async () => {
    const u = await payingUser('10');
    const order = { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1 };
    const hour = BigInt((await client.post<{ total: string }>(API.gpuOrderPrice, order)).body.total);
    const available = BigInt((await client.get<{ available: string }>(API.userMoney, u.token)).body.available);
    const fits = Number(available / hour);
    expect(fits).toBeGreaterThanOrEqual(1);

    const answers = await Promise.all(Array.from({ length: 30 }, () => client.post(API.gpuOrderCreate, order, u.token)));
    expect(replicasOf(answers)).toEqual(new Set(REPLICA_NAMES));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(fits);
    for (const refused of answers.filter((a) => a.status !== 200)) expect(refused.body).toMatchObject({ code: 40011001 });
    const money = await client.get<{ available: string }>(API.userMoney, u.token);
    expect(BigInt(money.body.available)).toBeGreaterThanOrEqual(0n);
  });

  it('live updates: a job cancelled through one replica reaches its progress stream open on another', async () => {
    const u = await payingUser('100');
    const job = await queuedJob(u.token);
    const stream = await EventStream.open<LoraJob>(`${cluster.url}${fill(API.sdTrainJobEvents, job.id)}`, u.token);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.events.length >= 1, 'the first event');
    expect(LORA_JOB_ACTIVE).toContain(stream.events[0]!.status);

    await client.landOn(stream.replica!); // the cancel then lands on the next replica
    const cancelled = await client.post<LoraJob>(fill(API.sdTrainJobCancel, job.id), undefined, u.token);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.replica).not.toBe(stream.replica);
    // Well within the stream's own once-a-minute look: the event came over the bus.
    await stream.until((s) => s.ended, 'the cancelled job to end the stream', 20_000);
    expect(stream.events.at(-1)!.status).toBe('cancelled');
  });

  // WAYS IN THROUGH HAPROXY — the web terminal's and the 云桌面's WebSockets: ways-in.test.ts, on a cluster of its own
  // whose agent runs the local driver (this one's simulated fleet has no shells).

  it('kill -9 of a replica under load: GETs all answered, the progress stream reconnects, payments credited once', async () => {
    const u = await payingUser('100');
    const job = await queuedJob(u.token);
    const url = `${cluster.url}${fill(API.sdTrainJobEvents, job.id)}`;
    const stream = await EventStream.open<LoraJob>(url, u.token);
    await stream.until((s) => s.events.length >= 1, 'the first event');
    const victim = stream.replica!;

    const load = startLoad(u.token);
    await load.warmUp();
    cluster.replicas.get(victim)!.process.kill('SIGKILL');
    await cluster.replicas.get(victim)!.exited;
    await client.until(
      () => cluster.serverStates(),
      (s) => s[victim] !== 'UP',
      'HAProxy to take the killed replica out',
      10_000,
    );
    await load.runFor(1500);
    const result = await load.stop();

    // GETs: every one answered, none by the dead replica after it went.
    expect(result.gets.length).toBeGreaterThan(20);
    expect(result.gets.filter((g) => g.status !== 200)).toEqual([]);
    // The stream ended with its replica; opened again, it shows the job from another one.
    await stream.until((s) => s.ended, 'the stream on the killed replica to end', 5_000);
    const again = await EventStream.open<LoraJob>(url, u.token);
    expect(again.replica).not.toBe(victim);
    await again.until((s) => s.events.length >= 1, 'the job on reconnecting');
    expect(again.events[0]!.id).toBe(job.id);
    expect(LORA_JOB_ACTIVE).toContain(again.events[0]!.status); // where the runner (on whichever replica) has it
    again.close();

    // POSTs: answered, or failed because their replica died under them — 502 from HAProxy, or the connection
    // closed without an answer (HAProxy's way when the request went to the replica over a reused connection) —
    // and never sent twice. What such a POST did is checked below: nothing, or its payment credited once.
    const failed = result.posts.filter((p) => p.status !== 200);
    console.log(
      `kill -9 ${victim}：GET ${result.gets.length} 次全部 200；POST ${result.posts.length} 次，失败 ${failed.length} 次${failed.length ? `（${failed.map((p) => p.status || p.what).join('；')}）` : ''}`,
    );
    expect(failed.filter((p) => p.status !== 502 && !/other side closed|socket hang up|ECONNRESET/.test(p.what))).toEqual([]);
    await expectPaymentsSettled(u.userId, u.token);
  });

  it('SIGTERM of another replica under load: it drains and exits cleanly, nothing fails, its progress stream moves', async () => {
    const u = await payingUser('100');
    const job = await queuedJob(u.token);
    const url = `${cluster.url}${fill(API.sdTrainJobEvents, job.id)}`;
    const stream = await EventStream.open<LoraJob>(url, u.token);
    await stream.until((s) => s.events.length >= 1, 'the first event');
    const stopping = stream.replica!;
    const replica = cluster.replicas.get(stopping)!;
    const load = startLoad(u.token);
    await load.warmUp();
    const signalled = Date.now();
    replica.process.kill('SIGTERM');
    const exit = await replica.exited;
    await load.runFor(1000);
    const result = await load.stop();

    expect(exit).toEqual({ code: 0, signal: null });
    expect([...result.gets, ...result.posts].filter((a) => a.status !== 200)).toEqual([]);
    expect((await cluster.serverStates())[stopping]).not.toBe('UP');
    const duringDrain = result.gets.filter((g) => g.replica === stopping && g.at > signalled).length;
    console.log(`SIGTERM ${stopping}：GET ${result.gets.length} 次（停止开始后仍由它应答 ${duringDrain} 次），POST ${result.posts.length} 次，全部 200`);
    // The stream was ended by the stop (not cut); opened again, it goes on from another replica.
    await stream.until((s) => s.ended, 'the stream on the stopped replica to end', 5_000);
    const again = await EventStream.open<LoraJob>(url, u.token);
    expect(again.replica).not.toBe(stopping);
    await again.until((s) => s.events.length >= 1, 'the job on reconnecting');
    expect(again.events[0]!.id).toBe(job.id);
    expect(LORA_JOB_ACTIVE).toContain(again.events[0]!.status); // where the runner (on whichever replica) has it
    again.close();
    await expectPaymentsSettled(u.userId, u.token);
  });

  it('the ledger is clean after it all (npm run ledger:check)', async () => {
    const check = await cluster.ledgerCheck();
    expect(check.output).toContain('账本检查通过');
    expect(check.code).toBe(0);
  });
});

interface Outcome {
  status: number;
  replica: ReplicaName | null;
  what: string;
  /** When the answer (or the failure) came. */
  at: number;
}

/**
 * A user's steady traffic: four loops of GETs (their account and balance, as the console's pages
 * poll), and one loop paying ¥10 recharges on the sandbox scan page. A request the client could not
 * complete at all counts as status 0.
 */
function startLoad(token: string) {
  let running = true;
  const gets: Outcome[] = [];
  const posts: Outcome[] = [];
  const send = async (into: Outcome[], what: string, call: () => Promise<Answer>) => {
    try {
      const a = await call();
      into.push({ status: a.status, replica: a.replica, what, at: Date.now() });
      return a;
    } catch (e) {
      const cause = (e as Error & { cause?: Error }).cause;
      into.push({ status: 0, replica: null, what: `${what}: ${(e as Error).message}${cause ? ` (${cause.message})` : ''}`, at: Date.now() });
      return null;
    }
  };
  const getLoop = async () => {
    while (running) {
      await send(gets, 'me', () => client.get(API.meInfo, token));
      await send(gets, 'money', () => client.get(API.userMoney, token));
    }
  };
  const payLoop = async () => {
    while (running) {
      const r = await send(posts, 'recharge', () => client.post(API.recharge, { amount: '10', method: 'Alipay' }, token));
      if (r?.status === 200) await send(posts, 'pay', () => client.post(`${new URL(r.body.qrContent).pathname}/pay`));
    }
  };
  const loops = [getLoop(), getLoop(), getLoop(), getLoop(), payLoop()];
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  return {
    /** Until the load has reached every replica HAProxy has in rotation. */
    async warmUp() {
      const states = await cluster.serverStates();
      const up = REPLICA_NAMES.filter((n) => states[n] === 'UP');
      while (!up.every((n) => gets.some((g) => g.replica === n))) await pause(50);
    },
    runFor: pause,
    async stop() {
      running = false;
      await Promise.all(loops);
      return { gets, posts };
    },
  };
}

/**
 * Every recharge of the user the gateway took money for is credited, once: each recharge is read (as
 * the recharge page polls it, which asks the gateway about a late notification) until none is left
 * unpaid on a trade the gateway says succeeded; then the cash statement has one 充值 per paid
 * recharge, of its amount, and nothing else came in.
 */
async function expectPaymentsSettled(userId: string, token: string) {
  const paidAtGateway = () =>
    query<{ id: string; status: string; amount: string }>(
      `select r.id, r.status, r.amount::text from recharges r join payments p on p.subject_id = r.id
         join sandbox_trades t on t.out_trade_no = p.out_trade_no
        where r.user_id = $1 and t.data->>'status' = 'Succeeded'`,
      [userId],
    );
  for (const r of (await paidAtGateway()).filter((x) => x.status !== 'Paid')) {
    await client.until(
      () => client.get<{ status: string }>(fill(API.rechargeOne, r.id), token),
      (a) => a.status === 200 && a.body.status === 'Paid',
      `recharge ${r.id}, paid at the gateway, to be credited`,
    );
  }
  const paid = await paidAtGateway();
  expect(paid.filter((r) => r.status !== 'Paid')).toEqual([]);
  const notPaid = await query<{ n: number }>(`select count(*)::int as n from recharges where user_id = $1 and status = 'Paid'`, [userId]);
  expect(notPaid[0]!.n).toBe(paid.length);
  const statement = await client.get<{ items: { kind: string; amount: string }[]; total: number }>(`${API.userStatement}?kind=cash&pageSize=100`, token);
  expect(statement.body.total).toBeLessThanOrEqual(100);
  const credited = statement.body.items.filter((e) => e.kind === 'gateway_in').map((e) => BigInt(e.amount));
  expect(credited.sort()).toEqual(paid.map((r) => BigInt(r.amount)).sort());
}

/** Files under `dir` whose content is exactly `bytes`. */
function filesHolding(dir: string, bytes: Buffer): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const p = path.join(at, name);
      const stat = lstatSync(p);
      if (stat.isDirectory()) walk(p);
      else if (stat.isFile() && stat.size === bytes.length && readFileSync(p).equals(bytes)) found.push(p);
    }
  };
  walk(dir);
  return found;
}
