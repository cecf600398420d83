/**
 * The image backend: where LoRA jobs and image generations run. The embedded trainer
 * (embedded-trainer.ts) does the work on this machine's CPU on the server's clock; a production
 * backend runs kohya sd-scripts on a GPU instance and reports through the same calls.
 *
 * The console talks to a backend the way it talks to any remote worker: it starts a run, polls it
 * for what happened since the last poll, and cancels it. A backend that forgot a run (its process
 * restarted) answers the poll with null, and the console starts the run again from its last saved
 * epoch, as sd-scripts resumes from a saved state.
 */
import type { ComfyGraph, ComfyWsMessage, DatasetKind, DiffusionParams, LoraParams, SdBaseModelId } from '@console/contract';

export interface TrainingImage {
  name: string;
  caption: string;
  read(): Promise<Buffer>;
}

export interface TrainingRun {
  jobId: string;
  params: LoraParams;
  baseModel: SdBaseModelId;
  /** sd-scripts' output_name: the files are `<outputName>-<epoch:06>.safetensors`. */
  outputName: string;
  triggerWord: string;
  kind: DatasetKind;
  images: TrainingImage[];
  /** Steps per epoch and in all, as quoted before the start. */
  steps: { perEpoch: number; total: number };
  /** Epochs an earlier run of this job saved: this run goes on after them. */
  fromEpoch: number;
}

export type TrainerEvent =
  | { type: 'phase'; phase: 'training' | 'saving' }
  | { type: 'log'; line: string }
  /** Steps done so far (absolute) and the loss at some of the steps since the last event. */
  | { type: 'progress'; step: number; loss: [number, number][] }
  | { type: 'epoch'; epoch: number; lora: Buffer; samples: Buffer[] }
  | { type: 'done' }
  | { type: 'failed'; reason: string };

export interface TrainerDriver {
  readonly name: string;
  /** How many times faster than the reference card (contract `loraTimeline`) it runs: 1 for a real RTX 4090. */
  readonly speedup: number;
  /** Starts a run (it begins in its preparing phase: loading the model and the images). */
  start(run: TrainingRun): Promise<void>;
  /** What the run did since the last poll, in order; null when the backend does not know the run. */
  poll(jobId: string): Promise<TrainerEvent[] | null>;
  /** Stops a run; a run it does not know is already stopped. */
  cancel(jobId: string): Promise<void>;
}

/** A txt2img task: its images are made one after another, image i with seed + i (as WebUI's batches do). */
export interface PaintingTask {
  taskId: string;
  params: Omit<DiffusionParams, 'loras'> & { seed: number };
  /** Each LoRA's colour (the embedded trainer's files carry one) and weight; ComfyUI loads the file by name. */
  loras: { color: [number, number, number]; weight: number; file?: string; read?: () => Promise<Buffer> }[];
  /** A ComfyUI workflow (API format) run as it is: `params` then only summarise it. */
  workflow?: ComfyGraph;
  /** Images an earlier run of this task finished: this run makes the rest. */
  fromImage: number;
}

export type PainterEvent =
  /** The image being made and its sampling step. */
  | { type: 'progress'; image: number; step: number }
  | { type: 'image'; index: number; seed: number; png: Buffer }
  /** A ComfyUI backend's own message about the run (per-node progress). */
  | { type: 'node'; message: ComfyWsMessage }
  | { type: 'done' }
  | { type: 'failed'; reason: string };

export interface PainterDriver {
  readonly name: string;
  readonly speedup: number;
  /** Whether it can use the account's own trained LoRAs (a ComfyUI needs their files in its loras folder). */
  readonly ownLoras: boolean;
  start(task: PaintingTask): Promise<void>;
  /** What the task did since the last poll; null when the backend does not know it. */
  poll(taskId: string): Promise<PainterEvent[] | null>;
  cancel(taskId: string): Promise<void>;
  /** Lets go of connections and servers (the server's shutdown). */
  close?(): Promise<void>;
}
