/**
 * The embedded painter: makes a task's images one after another on this machine's CPU, each taking
 * the GPU time it would on the reference card (contract `diffusionImageSeconds`, divided by
 * `speedup`), with the sampling steps advancing through it. Each image is painted by render.ts
 * from its parameters alone, so the same seed and parameters give the same picture.
 *
 * Tasks live in this process's memory; after a restart the poll answers null and the console starts
 * the task again from its first unfinished image.
 */
import { diffusionImageSeconds } from '@console/contract';
import type { Clock } from '../../clock.js';
import { renderImage } from './render.js';
import type { PainterDriver, PainterEvent, PaintingTask } from './types.js';

interface Task {
  task: PaintingTask;
  startedAt: number;
  /** The next image to finish. */
  next: number;
  lastStep: number;
  polledAt: number;
}

/** Longer than any runner stays silent before its work is taken over (STALE_RUNNER_MS and three ticks). */
const FORGET_AFTER_MS = 5 * 60_000;

export class EmbeddedPainter implements PainterDriver {
  readonly name = 'embedded';
  readonly ownLoras = true;
  private tasks = new Map<string, Task>();

  constructor(
    private clock: Clock,
    readonly speedup = 1,
  ) {}

  async start(task: PaintingTask): Promise<void> {
    this.sweep();
    this.tasks.set(task.taskId, { task, startedAt: this.clock.now().getTime(), next: task.fromImage, lastStep: -1, polledAt: this.clock.now().getTime() });
  }

  /** A task nobody polled for a while was cancelled or taken over by another process: forgotten. */
  private sweep() {
    const before = this.clock.now().getTime() - FORGET_AFTER_MS;
    for (const [id, t] of this.tasks) if (t.polledAt < before) this.tasks.delete(id);
  }

  async cancel(taskId: string): Promise<void> {
    this.tasks.delete(taskId);
  }

  async poll(taskId: string): Promise<PainterEvent[] | null> {
    const t = this.tasks.get(taskId);
    if (!t) return null;
    t.polledAt = this.clock.now().getTime();
    const events: PainterEvent[] = [];
    try {
      await this.advance(t, events);
    } catch (e) {
      events.push({ type: 'failed', reason: `生成出错：${(e as Error).message}` });
    }
    if (events.some((e) => e.type === 'done' || e.type === 'failed')) this.tasks.delete(taskId);
    return events;
  }

  private async advance(t: Task, events: PainterEvent[]): Promise<void> {
    const { params } = t.task;
    const perImage = diffusionImageSeconds(params);
    const elapsed = ((this.clock.now().getTime() - t.startedAt) * this.speedup) / 1000;
    // The epsilon: an image due exactly now is done, whatever the binary fractions say.
    const finished = Math.min(params.batchCount, t.task.fromImage + Math.floor(elapsed / perImage + 1e-9));
    // One picture per poll at most: the rest are due at the next poll, and a poll stays short.
    if (t.next < finished) {
      const seed = (params.seed + t.next) % 4294967296;
      const png = await renderImage({ ...params, seed, loras: t.task.loras });
      events.push({ type: 'image', index: t.next, seed, png });
      t.next++;
      t.lastStep = -1;
    }
    if (t.next >= params.batchCount) {
      events.push({ type: 'done' });
      return;
    }
    if (t.next < finished) return; // behind: the next poll paints the next one
    const into = elapsed - (t.next - t.task.fromImage) * perImage;
    const step = Math.min(params.steps, Math.floor((into / perImage) * params.steps));
    if (step !== t.lastStep) {
      t.lastStep = step;
      events.push({ type: 'progress', image: t.next, step });
    }
  }
}
