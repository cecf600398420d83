/**
 * The kohya sd-scripts trainer against a stand-in of train_network.py (test/fixtures/fake-sd-scripts)
 * that reads the same TOML and writes the same log and files: the dataset laid out as sd-scripts
 * reads it, progress and loss from tqdm's bar, each epoch's file and samples, a resume from a saved
 * epoch, a crash reported with its last lines, and a cancel that ends the process.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loraPreset } from '@console/contract';
import { hostExec, KohyaTrainer, tar } from './kohya-trainer.js';
import { parseSafetensors } from './safetensors.js';
import type { TrainerEvent, TrainingRun } from './types.js';

const SCRIPTS = path.resolve(import.meta.dirname, '../../../test/fixtures/fake-sd-scripts');
let work: string;
afterEach(() => rmSync(work, { recursive: true, force: true }));

function trainer(env: Record<string, string> = {}) {
  work = mkdtempSync(path.join(tmpdir(), 'kohya-'));
  return new KohyaTrainer({
    exec: hostExec(env),
    scriptsDir: SCRIPTS,
    workDir: work,
    accelerate: path.join(SCRIPTS, 'accelerate'),
    models: { sd15: '/models/v1-5.safetensors', sdxl: '/models/sdxl.safetensors' },
  });
}

const png = Buffer.from('89504e470d0a1a0a', 'hex');
function job(over: Partial<TrainingRun> = {}): TrainingRun {
  const params = { ...loraPreset('person', 'sd15'), repeats: 2, epochs: 2, batchSize: 2 };
  return {
    jobId: crypto.randomUUID(),
    params,
    baseModel: 'sd15',
    outputName: '我的 LoRA',
    triggerWord: 'mychar',
    kind: 'person',
    images: ['a.png', 'b.png', 'c.png'].map((name) => ({ name, caption: `mychar, ${name}`, read: async () => png })),
    // 3 images × 2 repeats ÷ batch 2.
    steps: { perEpoch: 3, total: 6 },
    fromEpoch: 0,
    ...over,
  };
}

async function until(t: KohyaTrainer, id: string): Promise<TrainerEvent[]> {
  const all: TrainerEvent[] = [];
  for (let i = 0; i < 400; i++) {
    const events = await t.poll(id);
    if (!events) throw new Error('run lost');
    all.push(...events);
    if (events.some((e) => e.type === 'done' || e.type === 'failed')) return all;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('never ended');
}

describe('kohya sd-scripts trainer', () => {
  it('lays the dataset out for sd-scripts, follows the log to the end and hands over each epoch', async () => {
    const t = trainer();
    const run = job();
    await t.start(run);
    const dir = path.join(work, run.jobId);
    expect(readdirSync(path.join(dir, 'img/2_mychar')).sort()).toEqual(['a.png', 'a.txt', 'b.png', 'b.txt', 'c.png', 'c.txt']);
    expect(readFileSync(path.join(dir, 'img/2_mychar/b.txt'), 'utf8')).toBe('mychar, b.png');
    const config = readFileSync(path.join(dir, 'config.toml'), 'utf8');
    expect(config).toContain('max_train_epochs = 2');
    expect(config).toContain('pretrained_model_name_or_path = "/models/v1-5.safetensors"');
    expect(config).toContain('clip_skip = 2');

    const events = await until(t, run.jobId);
    expect(events.at(-1)).toEqual({ type: 'done' });
    expect(events.find((e) => e.type === 'phase')).toEqual({ type: 'phase', phase: 'training' });
    const progress = events.flatMap((e) => (e.type === 'progress' ? [e] : []));
    expect(progress.at(-1)!.step).toBe(6);
    const losses = progress.flatMap((p) => p.loss.map(([, l]) => l));
    expect(losses.at(-1)!).toBeLessThan(losses[0]!);
    const epochs = events.flatMap((e) => (e.type === 'epoch' ? [e] : []));
    expect(epochs.map((e) => e.epoch)).toEqual([1, 2]);
    for (const e of epochs) {
      expect(Object.keys(parseSafetensors(e.lora).tensors)).toEqual(['lora_unet_x.lora_down.weight']);
      expect(e.samples).toHaveLength(1);
      expect(e.samples[0]!.subarray(1, 4).toString()).toBe('PNG');
    }
    expect(events.some((e) => e.type === 'log' && e.line === 'model saved.')).toBe(true);
    expect(await t.poll(run.jobId)).toBeNull();
  });

  it('resumes from a saved epoch: only the epochs after it', async () => {
    const t = trainer();
    const run = job({ params: { ...job().params, epochs: 3 }, steps: { perEpoch: 3, total: 9 } });
    await t.start(run);
    const first = await until(t, run.jobId);
    expect(first.filter((e) => e.type === 'epoch')).toHaveLength(3);
    // Started again after epoch 2: resume from its state.
    await t.start({ ...run, fromEpoch: 2 });
    expect(readFileSync(path.join(work, run.jobId, 'config.toml'), 'utf8')).toContain(`resume = "${work}/${run.jobId}/out/lora-000002-state"`);
    const again = await until(t, run.jobId);
    expect(again.flatMap((e) => (e.type === 'epoch' ? [e.epoch] : []))).toEqual([3]);
    expect(again.flatMap((e) => (e.type === 'progress' ? [e.step] : []))[0]).toBeGreaterThan(6);
  });

  it('reports a crash with its last lines, keeping the epochs saved before it', async () => {
    const t = trainer({ FAKE_FAIL_AT_EPOCH: '2' });
    const run = job();
    await t.start(run);
    const events = await until(t, run.jobId);
    expect(events.flatMap((e) => (e.type === 'epoch' ? [e.epoch] : []))).toEqual([1]);
    const failed = events.at(-1)!;
    expect(failed.type).toBe('failed');
    expect(failed.type === 'failed' && failed.reason).toContain('CUDA out of memory');
  });

  it('a cancel ends the process', async () => {
    const t = trainer({ FAKE_STEP_SECONDS: '0.2' });
    const run = job();
    await t.start(run);
    await new Promise((r) => setTimeout(r, 300));
    const pid = readFileSync(path.join(work, run.jobId, 'pid'), 'utf8').trim();
    await t.cancel(run.jobId);
    await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')).toBe(false);
    expect(await t.poll(run.jobId)).toBeNull();
  });

  it('writes tar archives that tar reads, long paths included', async () => {
    work = mkdtempSync(path.join(tmpdir(), 'kohya-tar-'));
    const long = `img/10_${'x'.repeat(60)}/${'y'.repeat(80)}.png`;
    const res = await hostExec().run(
      `tar -x -C ${work} && cat ${work}/${long} ${work}/a.txt`,
      tar([
        { name: long, body: Buffer.from('picture') },
        { name: 'a.txt', body: Buffer.from(' caption') },
      ]),
    );
    expect(res.stdout.toString()).toBe('picture caption');
  });

  it("keeps only the last few KB of what the training machine's root writes to a command's error output", async () => {
    // 64 MB of error output, then a last line: the console keeps the end, never the whole.
    const res = await hostExec().run(`head -c 67108864 /dev/zero | tr '\\0' x >&2; echo last-words >&2; echo done`);
    expect(res.stdout.toString()).toBe('done\n');
    expect(res.stderr.length).toBeLessThanOrEqual(4096);
    expect(res.stderr.endsWith('xlast-words\n')).toBe(true);
  });
});
