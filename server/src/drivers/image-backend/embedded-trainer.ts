/**
 * The embedded LoRA trainer: runs a job's whole lifecycle on this machine's CPU, keeping to the time
 * the job would take on the reference GPU (contract `loraTimeline`, divided by `speedup`).
 *
 * The work is real, only small: preparing decodes every image of the dataset (its mean colour is
 * what this trainer learns); each step draws a batch with the job's seed and takes a gradient step
 * on the squared error between the LoRA's colour and the batch's, at the learning rate the job's
 * scheduler gives for that step, so the loss falls as it does in sd-scripts and settles at what the
 * dataset's variety leaves. Each epoch writes a LoRA file carrying the colour learnt so far
 * (lora-file.ts) and a sample image painted with it (render.ts), so later epochs' samples move
 * toward the dataset's colours.
 *
 * Runs live in this process's memory: after a restart the poll answers null and the console starts
 * the run again from its last saved epoch; the steps before it are replayed (same seed, same
 * batches), so the result is the one an uninterrupted run gives.
 */
import sharp from 'sharp';
import { SD_BASE_MODELS, loraTimeline, type LoraParams } from '@console/contract';
import type { Clock } from '../../clock.js';
import { loraFile } from './lora-file.js';
import { mulberry32, renderImage } from './render.js';
import type { TrainerDriver, TrainerEvent, TrainingRun } from './types.js';

type Rgb = [number, number, number];

/** The loss curve keeps about this many points whatever the job's length. */
const LOSS_POINTS = 300;
const SAMPLE_SIZE = 512;
const KIND_PROMPTS = { person: '1person, portrait, upper body', style: 'landscape, scenery, detailed', concept: 'object, still life, centered' } as const;

interface Run {
  run: TrainingRun;
  startedAt: number;
  /** The images' mean colours, being decoded during the preparing phase. */
  features: Promise<Rgb[]>;
  phase: 'preparing' | 'training' | 'saving';
  learner: Learner | null;
  /** Epochs saved, including those of earlier runs. */
  saved: number;
  pending: TrainerEvent[];
  polledAt: number;
}

/** Longer than any runner stays silent before its work is taken over (STALE_RUNNER_MS and three ticks). */
const FORGET_AFTER_MS = 5 * 60_000;

export class EmbeddedTrainer implements TrainerDriver {
  readonly name = 'embedded';
  private runs = new Map<string, Run>();

  constructor(
    private clock: Clock,
    /** How many times faster than the reference GPU (tests and demonstrations). */
    readonly speedup = 1,
  ) {}

  /** A run nobody polled for a while was cancelled or taken over by another process: forgotten. */
  private sweep() {
    const before = this.clock.now().getTime() - FORGET_AFTER_MS;
    for (const [id, r] of this.runs) if (r.polledAt < before) this.runs.delete(id);
  }

  async start(run: TrainingRun): Promise<void> {
    this.sweep();
    const features = decodeAll(run);
    features.catch(() => {}); // read at the end of preparing
    const p = run.params;
    this.runs.set(run.jobId, {
      run,
      startedAt: this.clock.now().getTime(),
      polledAt: this.clock.now().getTime(),
      features,
      phase: 'preparing',
      learner: null,
      saved: run.fromEpoch,
      pending: [
        log(`loading model: ${SD_BASE_MODELS.find((m) => m.id === run.baseModel)!.name}`),
        log(`num train images * repeats: ${run.images.length * p.repeats}`),
        log(`num batches per epoch: ${run.steps.perEpoch}`),
        log(`num epochs: ${p.epochs}`),
        log(`batch size per device: ${p.batchSize}`),
        log(`total optimization steps: ${run.steps.total}`),
        log(`optimizer: ${p.optimizer}, lr_scheduler: ${p.scheduler}, unet_lr: ${p.unetLr}, text_encoder_lr: ${p.textEncoderLr}`),
        ...(run.fromEpoch > 0 ? [log(`resume from epoch ${run.fromEpoch} (step ${run.fromEpoch * run.steps.perEpoch})`)] : []),
      ],
    });
  }

  async cancel(jobId: string): Promise<void> {
    this.runs.delete(jobId);
  }

  async poll(jobId: string): Promise<TrainerEvent[] | null> {
    const r = this.runs.get(jobId);
    if (!r) return null;
    r.polledAt = this.clock.now().getTime();
    try {
      await this.advance(r);
    } catch (e) {
      r.pending.push({ type: 'failed', reason: e instanceof TrainerFailure ? e.message : `训练进程出错：${(e as Error).message}` });
    }
    const events = r.pending;
    r.pending = [];
    if (events.some((e) => e.type === 'done' || e.type === 'failed')) this.runs.delete(jobId);
    return events;
  }

  /** Brings the run up to the clock: the steps and the saves whose time has come. */
  private async advance(r: Run): Promise<void> {
    const { run } = r;
    const p = run.params;
    const t = loraTimeline(p, run.baseModel);
    const elapsed = ((this.clock.now().getTime() - r.startedAt) * this.speedup) / 1000;
    if (elapsed + 1e-9 < t.setupSeconds) return;
    if (!r.learner) {
      const features = await r.features;
      r.learner = new Learner(features, p, run.steps.total);
      r.learner.runTo(run.fromEpoch * run.steps.perEpoch, null); // replay what the saved epochs did
      r.phase = 'training';
      r.pending.push({ type: 'phase', phase: 'training' }, log(`epoch ${run.fromEpoch + 1}/${p.epochs}`));
    }
    const epochSeconds = run.steps.perEpoch * t.secondsPerStep + t.saveSecondsPerEpoch;
    const trained = elapsed - t.setupSeconds;
    while (r.saved < p.epochs) {
      const epochStart = (r.saved - run.fromEpoch) * epochSeconds;
      // The epsilon: a step that ends exactly now is done, whatever the binary fractions say.
      const stepsDue = Math.min(run.steps.perEpoch, Math.floor((trained - epochStart) / t.secondsPerStep + 1e-9));
      const target = r.saved * run.steps.perEpoch + Math.max(0, stepsDue);
      if (target > r.learner.step) this.train(r, target);
      if (trained + 1e-9 < epochStart + epochSeconds) {
        if (stepsDue >= run.steps.perEpoch && r.saved + 1 === p.epochs && r.phase !== 'saving') {
          r.phase = 'saving';
          r.pending.push({ type: 'phase', phase: 'saving' });
        }
        return;
      }
      await this.save(r);
    }
    r.pending.push(log('model saved.'), { type: 'done' });
  }

  private train(r: Run, target: number) {
    const points: [number, number][] = [];
    const every = Math.max(1, Math.ceil(r.run.steps.total / LOSS_POINTS));
    r.learner!.runTo(target, (step, loss) => {
      if (step % every === 0 || step === target) points.push([step, round4(loss)]);
    });
    const last = points[points.length - 1];
    r.pending.push({ type: 'progress', step: target, loss: points });
    if (last) r.pending.push(log(`steps: ${target}/${r.run.steps.total} loss=${last[1]}`));
  }

  private async save(r: Run): Promise<void> {
    const { run } = r;
    const epoch = r.saved + 1;
    const color = r.learner!.color;
    const file = `${run.outputName}-${String(epoch).padStart(6, '0')}.safetensors`;
    const lora = loraFile({
      color,
      images: run.images.length,
      params: run.params,
      epoch,
      outputName: run.outputName,
      baseModel: SD_BASE_MODELS.find((m) => m.id === run.baseModel)!.name,
      trainingStartedAt: new Date(r.startedAt),
    });
    const sample = await renderImage({
      prompt: `${run.triggerWord || run.outputName}, ${KIND_PROMPTS[run.kind]}`,
      negativePrompt: 'lowres, blurry, worst quality',
      seed: run.params.seed,
      width: SAMPLE_SIZE,
      height: SAMPLE_SIZE,
      steps: 20,
      cfg: 7,
      loras: [{ color, weight: 1 }],
    });
    r.saved = epoch;
    r.pending.push(log(`saving checkpoint: ${file}`), { type: 'epoch', epoch, lora, samples: [sample] });
    if (epoch < run.params.epochs) r.pending.push(log(`epoch ${epoch + 1}/${run.params.epochs}`));
  }
}

/** A refusal of the job itself (no readable image), worded for the account holder. */
class TrainerFailure extends Error {}

/** The images' mean colours (0–1): decoding every image is the preparing phase's real work. */
async function decodeAll(run: TrainingRun): Promise<Rgb[]> {
  const colours: Rgb[] = [];
  for (const image of run.images) {
    try {
      const stats = await sharp(await image.read()).stats();
      const [r, g, b] = stats.channels;
      colours.push([r!.mean / 255, (g ?? r!).mean / 255, (b ?? r!).mean / 255]);
    } catch {
      // An image gone from storage or unreadable is skipped, as sd-scripts skips what it cannot open.
    }
  }
  if (colours.length === 0) throw new TrainerFailure('数据集中没有可读取的图片，训练无法开始；费用已全部退回');
  return colours;
}

/**
 * The trainer's model: a colour learnt by minibatch gradient descent on the squared error to the
 * batch's mean, with the job's seed (which images each batch draws), batch size, learning rate
 * and scheduler. Deterministic: the same job replays to the same state.
 */
class Learner {
  color: Rgb = [0.5, 0.5, 0.5];
  step = 0;
  private random: () => number;

  constructor(
    private features: Rgb[],
    private p: LoraParams,
    private total: number,
  ) {
    this.random = mulberry32(p.seed >>> 0);
  }

  runTo(target: number, onLoss: ((step: number, loss: number) => void) | null) {
    const { batchSize, unetLr, networkAlpha, networkDim, noiseOffset } = this.p;
    // Relative to the usual 1e-4 and scaled by alpha/dim as sd-scripts scales a LoRA's update; spread
    // over the job's steps, so that the usual settings learn the dataset by the end whatever its length
    // (as users size their steps), a rate too low underfits and one too high overshoots.
    const base = Math.min(0.5, ((unetLr / 1e-4) * Math.sqrt((2 * networkAlpha) / networkDim) * 4) / Math.max(1, this.total));
    while (this.step < target) {
      const batch: Rgb[] = [];
      for (let i = 0; i < batchSize; i++) batch.push(this.features[Math.floor(this.random() * this.features.length)]!);
      const lr = base * scheduled(this.p.scheduler, this.step / Math.max(1, this.total));
      let loss = 0;
      const grad: Rgb = [0, 0, 0];
      for (const x of batch) {
        for (let k = 0; k < 3; k++) {
          const d = this.color[k]! - x[k]!;
          loss += (d * d) / 3;
          grad[k]! += (2 * d) / batch.length;
        }
      }
      for (let k = 0; k < 3; k++) this.color[k] = this.color[k]! - lr * grad[k]!;
      this.step++;
      // The diffusion loss never reaches 0: a floor, plus the noise of which timesteps the batch drew.
      const noise = (this.random() - 0.5) * 0.03 * (1 + noiseOffset);
      onLoss?.(this.step, Math.max(0.01, 0.06 + (0.6 * loss) / batch.length + noise));
    }
  }
}

/** The learning rate's factor at a point of the run (0–1), as sd-scripts' schedulers give it. */
function scheduled(scheduler: LoraParams['scheduler'], t: number): number {
  switch (scheduler) {
    case 'constant':
      return 1;
    case 'constant_with_warmup':
      return Math.min(1, t / 0.05);
    case 'linear':
    case 'polynomial':
      return Math.max(0, 1 - t);
    case 'cosine':
      return 0.5 * (1 + Math.cos(Math.PI * t));
    case 'cosine_with_restarts':
      return 0.5 * (1 + Math.cos(Math.PI * ((t * 2) % 1)));
  }
}

function log(line: string): TrainerEvent {
  return { type: 'log', line };
}

function round4(v: number): number {
  return Math.round(v * 10000) / 10000;
}
