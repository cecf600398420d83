/**
 * A training job's live progress reaches a page connected to another replica than the one whose
 * runner moves the job: the runner's "job changed" is an event on the bus (db/bus.ts). Replica b
 * runs its runner (and its stream's own look) only once a minute, so what its stream sends in the
 * meantime came from a's events. Two replicas on one PostgreSQL database under TEST_DATABASE_URL; on
 * PGlite two apps on one database and its in-process bus.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, loraPreset, type LoraJob, type LoraParams } from '@console/contract';
import { certify, fundedUser, get, json, multipartFiles, pngImage, post } from '../../../test/harness.js';
import { twoReplicas, type Replicas } from '../../../test/replicas.js';

let r: Replicas;
beforeAll(async () => {
  r = await twoReplicas({
    env: { TRAINER_CAPACITY: '2', IMAGE_BACKEND_TICK_MS: '100' },
    envB: { TRAINER_CAPACITY: '2', IMAGE_BACKEND_TICK_MS: '60000' },
  });
}, 180_000); // two servers on a busy machine
afterAll(async () => r.close());

const fill = (p: string, id: string) => p.replace(':id', id);
const PARAMS: LoraParams = { ...loraPreset('person', 'sd15'), repeats: 1, epochs: 3, batchSize: 1 };
const pause = () => new Promise((resolve) => setTimeout(resolve, 250));

describe('live progress on another replica', () => {
  it("streams the job moved by replica a's runner to a page connected to replica b, to its end", async () => {
    const { a, b } = r;
    const u = await fundedUser(a, '100');
    await certify(a, u.token);
    const ds = json<{ id: string }>(await post(a.app, API.sdDatasets, { name: '训练集', kind: 'person', triggerWord: 'sks' }, u.token)).id;
    const { payload, headers } = multipartFiles(
      [0, 1, 2, 3].map((i) => ({ name: `img${i}.png`, content: pngImage(32, 32, i % 2 ? [20, 20, 230] : [230, 20, 20]), type: 'image/png' })),
    );
    const up = await a.app.inject({ method: 'POST', url: fill(API.sdDatasetImages, ds), payload, headers: { ...headers, authorization: `Bearer ${u.token}` } });
    expect(up.statusCode).toBe(200);
    const started = await post(a.app, API.sdTrainJobs, { datasetId: ds, baseModel: 'sd15', params: PARAMS, name: 'my_lora', requestId: randomUUID() }, u.token);
    const j = json<LoraJob>(started);

    const stream = get(b.app, fill(API.sdTrainJobEvents, j.id), u.token);
    await pause();
    await a.ctx.training.tick();
    for (const seconds of [61, 2, 6, 10, 10]) {
      await pause();
      a.clock.advance(seconds * 1000);
      await a.ctx.training.tick();
    }
    const res = await stream;
    expect(res.headers['content-type']).toContain('text/event-stream');
    const events = res.body
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as LoraJob);
    expect(events[0]!.status).toBe('queued');
    expect(events.at(-1)!.status).toBe('done');
    expect([...new Set(events.map((e) => e.status))]).toEqual(expect.arrayContaining(['queued', 'training', 'done']));
  });
});
