/**
 * The production LoRA trainer: kohya sd-scripts (`train_network.py`, `sdxl_train_network.py`) on a
 * GPU machine the operator keeps for training (KOHYA_INSTANCE_ID), reached through the compute
 * driver's way into a running machine (`shell`), the one the web terminal uses.
 *
 * A start uploads the dataset as sd-scripts reads it (`img/<repeats>_<trigger>/` with a same-name
 * `.txt` caption per image, one tar through stdin), writes the dataset and training TOML files from
 * the job's parameters and launches `accelerate launch` in the background with its log in a file.
 * Each poll reads the log from where the last one stopped: tqdm's `steps: …| 120/1000 […,
 * avr_loss=0.0876]` is the progress and the loss, `epoch 3/10` the phase, `saving checkpoint: …`
 * an epoch's file (read once the log has gone past it) with its samples from `out/sample/`,
 * `model saved.` the end; a process gone without it failed. Every epoch saves its state, so a run
 * started again after an epoch resumes from it (`resume`).
 *
 * What a run knows lives in this process; a console restart answers null and the job is started
 * again from its last saved epoch, as with the embedded trainer.
 */
import { spawn } from 'node:child_process';
import { LORA_OPTIMIZERS, SD_BASE_MODELS, type SdBaseModelId } from '@console/contract';
import type { ComputeDriver } from '../compute/types.js';
import type { TrainerDriver, TrainerEvent, TrainingRun } from './types.js';

/** Runs a shell script inside the training machine. */
export interface MachineExec {
  run(script: string, stdin?: Buffer): Promise<{ code: number; stdout: Buffer; stderr: string }>;
}

export interface KohyaOptions {
  exec: MachineExec;
  /** Where sd-scripts is checked out on the machine. */
  scriptsDir: string;
  /** Where jobs' datasets, configs, logs and outputs go (one directory per job). */
  workDir: string;
  /** The accelerate launcher (`accelerate`, or a path). */
  accelerate: string;
  /** Each base model's checkpoint on the machine. */
  models: Record<SdBaseModelId, string>;
}

interface Run {
  run: TrainingRun;
  dir: string;
  /** Bytes of the log read so far, and a line cut in half at the end of the last read. */
  offset: number;
  partial: string;
  phase: 'preparing' | 'training' | 'saving';
  step: number;
  /** Checkpoints announced in the log, read once the log has moved past them. */
  announced: { epoch: number; file: string }[];
  saved: number;
  finished: boolean;
}

const OUTPUT_NAME = 'lora';
/** Log lines of a failure shown to the user. */
const FAILURE_LINES = 6;

export class KohyaTrainer implements TrainerDriver {
  readonly name = 'kohya';
  readonly speedup = 1;
  private runs = new Map<string, Run>();

  constructor(private opts: KohyaOptions) {}

  async start(run: TrainingRun): Promise<void> {
    const dir = `${this.opts.workDir}/${run.jobId}`;
    const p = run.params;
    const imageDir = `img/${p.repeats}_${safeName(run.triggerWord) || 'subject'}`;
    if (run.fromEpoch === 0) {
      const files: { name: string; body: Buffer }[] = [];
      for (const image of run.images) {
        files.push({ name: `${imageDir}/${image.name}`, body: await image.read() });
        files.push({ name: `${imageDir}/${image.name.replace(/\.[^.]+$/, '')}.txt`, body: Buffer.from(image.caption) });
      }
      files.push({ name: 'dataset.toml', body: Buffer.from(datasetToml(run, `${dir}/${imageDir}`)) });
      files.push({
        name: 'prompts.txt',
        body: Buffer.from(`${run.triggerWord || 'subject'}, best quality --n lowres, blurry --w ${p.resolution} --h ${p.resolution} --s 20 --d ${p.seed}\n`),
      });
      await this.must(`rm -rf ${q(dir)} && mkdir -p ${q(dir)}/out && tar -x -C ${q(dir)}`, tar(files));
    }
    await this.must(`cat > ${q(dir)}/config.toml`, Buffer.from(this.trainingToml(run, dir)));
    const script = SD_BASE_MODELS.find((m) => m.id === run.baseModel)!.family === 'sdxl' ? 'sdxl_train_network.py' : 'train_network.py';
    await this.must(
      `cd ${q(this.opts.scriptsDir)} && : > ${q(dir)}/train.log && ` +
        `(nohup ${this.opts.accelerate} launch --num_cpu_threads_per_process 1 ${script} --config_file ${q(dir)}/config.toml < /dev/null >> ${q(dir)}/train.log 2>&1 & echo $! > ${q(dir)}/pid)`,
    );
    this.runs.set(run.jobId, {
      run,
      dir,
      offset: 0,
      partial: '',
      phase: 'preparing',
      step: run.fromEpoch * run.steps.perEpoch,
      announced: [],
      saved: run.fromEpoch,
      finished: false,
    });
  }

  async cancel(jobId: string): Promise<void> {
    const r = this.runs.get(jobId);
    this.runs.delete(jobId);
    const dir = r?.dir ?? `${this.opts.workDir}/${jobId}`;
    await this.opts.exec.run(`test -f ${q(dir)}/pid && kill $(cat ${q(dir)}/pid) 2>/dev/null; true`).catch(() => {});
  }

  async poll(jobId: string): Promise<TrainerEvent[] | null> {
    const r = this.runs.get(jobId);
    if (!r) return null;
    // Alive first, then the log: a process found gone has written all it ever will.
    const read = await this.opts.exec.run(
      `if kill -0 $(cat ${q(r.dir)}/pid) 2>/dev/null; then echo alive; else echo gone; fi; tail -c +${r.offset + 1} ${q(r.dir)}/train.log | head -c ${LOG_READ_MAX}`,
    );
    if (read.code !== 0) throw new Error(`训练机无法读取日志：${read.stderr.trim()}`);
    const out = read.stdout;
    const newline = out.indexOf(10);
    const alive = out.subarray(0, newline).toString() === 'alive';
    const chunk = out.subarray(newline + 1);
    r.offset += chunk.length;
    const events: TrainerEvent[] = [];
    const lines = (r.partial + chunk.toString('utf8')).split(/\r|\n/);
    r.partial = alive ? lines.pop()! : '';
    let ended = false;
    for (const line of lines) ended = this.read(r, line, events) || ended;
    // An announced checkpoint is complete once the log has moved on (or the process ended).
    const complete = alive && !ended ? r.announced.slice(0, -1) : r.announced;
    for (const a of complete) {
      events.push(await this.epoch(r, a));
      r.saved = a.epoch;
    }
    r.announced = r.announced.slice(complete.length);
    if (ended || !alive) {
      this.runs.delete(jobId);
      if (ended && r.saved >= r.run.params.epochs) events.push({ type: 'done' });
      else events.push({ type: 'failed', reason: `训练进程退出：${(await this.tail(r)).join(' | ') || '没有输出'}` });
    }
    return events;
  }

  /** One log line into events; true at the end of training. */
  private read(r: Run, raw: string, events: TrainerEvent[]): boolean {
    const line = raw.trim();
    if (!line) return false;
    const bar = /steps:\s*\d+%\|[^|]*\|\s*(\d+)\/(\d+)(?:.*?avr_loss=([\d.eE+-]+))?/.exec(line);
    if (bar) {
      const base = r.run.fromEpoch * r.run.steps.perEpoch;
      const step = Number(bar[1]) < base ? base + Number(bar[1]) : Number(bar[1]);
      if (step > r.step || bar[3]) {
        r.step = Math.max(r.step, step);
        events.push({ type: 'progress', step: r.step, loss: bar[3] ? [[r.step, Number(bar[3])]] : [] });
      }
      return false;
    }
    events.push({ type: 'log', line: line.slice(0, 500) });
    if (/^epoch \d+\/\d+/.test(line) && r.phase !== 'training') {
      r.phase = 'training';
      events.push({ type: 'phase', phase: 'training' });
    }
    const saving = /^saving checkpoint: (.+\.safetensors)$/.exec(line);
    if (saving) {
      const numbered = /-(\d{6})\.safetensors$/.exec(saving[1]!);
      r.announced.push({ epoch: numbered ? Number(numbered[1]) : r.run.params.epochs, file: saving[1]! });
      if (!numbered) {
        r.phase = 'saving';
        events.push({ type: 'phase', phase: 'saving' });
      }
    }
    return line.includes('model saved.');
  }

  private async epoch(r: Run, a: { epoch: number; file: string }): Promise<TrainerEvent> {
    const lora = await this.must(`cat ${q(a.file)}`);
    const listed = await this.must(`ls -1 ${q(r.dir)}/out/sample 2>/dev/null | grep '_e${String(a.epoch).padStart(6, '0')}_' | grep '\\.png$' || true`);
    const samples: Buffer[] = [];
    for (const name of listed.toString().split('\n').filter(Boolean).sort()) samples.push(await this.must(`cat ${q(`${r.dir}/out/sample/${name}`)}`));
    return { type: 'epoch', epoch: a.epoch, lora, samples };
  }

  private async tail(r: Run): Promise<string[]> {
    const res = await this.opts.exec.run(`tail -n 40 ${q(r.dir)}/train.log`).catch(() => null);
    const lines = (res?.stdout.toString() ?? '').split(/\r|\n/).map((l) => l.trim());
    return lines.filter((l) => l && !l.startsWith('steps:')).slice(-FAILURE_LINES);
  }

  private async must(script: string, stdin?: Buffer): Promise<Buffer> {
    const res = await this.opts.exec.run(script, stdin);
    if (res.code !== 0) throw new Error(`训练机命令失败（${res.code}）：${res.stderr.trim().slice(0, 300)}`);
    return res.stdout;
  }

  /** train_network.py's arguments as its --config_file TOML. */
  private trainingToml(run: TrainingRun, dir: string): string {
    const p = run.params;
    const family = SD_BASE_MODELS.find((m) => m.id === run.baseModel)!.family;
    const args: Record<string, string | number | boolean> = {
      pretrained_model_name_or_path: this.opts.models[run.baseModel],
      dataset_config: `${dir}/dataset.toml`,
      output_dir: `${dir}/out`,
      output_name: OUTPUT_NAME,
      save_model_as: 'safetensors',
      save_every_n_epochs: 1,
      save_state: true,
      max_train_epochs: p.epochs,
      network_module: 'networks.lora',
      network_dim: p.networkDim,
      network_alpha: p.networkAlpha,
      unet_lr: p.unetLr,
      text_encoder_lr: p.textEncoderLr,
      optimizer_type: p.optimizer satisfies (typeof LORA_OPTIMIZERS)[number],
      lr_scheduler: p.scheduler,
      seed: p.seed,
      noise_offset: p.noiseOffset,
      min_snr_gamma: p.minSnrGamma,
      mixed_precision: 'fp16',
      save_precision: 'fp16',
      cache_latents: true,
      gradient_checkpointing: true,
      xformers: true,
      sample_every_n_epochs: 1,
      sample_prompts: `${dir}/prompts.txt`,
      sample_sampler: 'euler_a',
      ...(family === 'sd15' ? { clip_skip: p.clipSkip } : {}),
      ...(run.fromEpoch > 0 ? { resume: `${dir}/out/${OUTPUT_NAME}-${String(run.fromEpoch).padStart(6, '0')}-state` } : {}),
    };
    return toml(args);
  }
}

function datasetToml(run: TrainingRun, imageDir: string): string {
  const p = run.params;
  return [
    '[general]',
    toml({ shuffle_caption: p.shuffleCaption, caption_extension: '.txt', keep_tokens: p.keepTokens }),
    '',
    '[[datasets]]',
    toml({ resolution: p.resolution, batch_size: p.batchSize, enable_bucket: true }),
    '',
    '  [[datasets.subsets]]',
    toml({ image_dir: imageDir, num_repeats: p.repeats }),
  ].join('\n');
}

function toml(values: Record<string, string | number | boolean>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k} = ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
    .join('\n');
}

/** A trigger word as a directory name. */
function safeName(s: string): string {
  return s.replace(/[^0-9A-Za-z_-]/g, '').slice(0, 40);
}

/** A shell word. */
function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A ustar archive of the files (what `tar -x` reads from stdin). */
export function tar(files: { name: string; body: Buffer }[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    const name = Buffer.from(f.name);
    if (name.length > 255) throw new Error(`文件名过长：${f.name}`);
    const header = Buffer.alloc(512);
    // Names over 100 bytes are split into the prefix (directories) and the name.
    const cut = name.length > 100 ? f.name.lastIndexOf('/', f.name.length - 1) : -1;
    const [prefix, base] = cut > 0 ? [Buffer.from(f.name.slice(0, cut)), Buffer.from(f.name.slice(cut + 1))] : [Buffer.alloc(0), name];
    base.copy(header, 0);
    header.write('0000644\0', 100);
    header.write('0000000\0', 108);
    header.write('0000000\0', 116);
    header.write(`${f.body.length.toString(8).padStart(11, '0')}\0`, 124);
    header.write(
      `${Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, '0')}\0`,
      136,
    );
    header.write('        ', 148);
    header.write('0', 156);
    header.write('ustar\0', 257);
    header.write('00', 263);
    prefix.copy(header, 345);
    let sum = 0;
    for (const b of header) sum += b;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    parts.push(header, f.body, Buffer.alloc((512 - (f.body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** Commands through the compute driver's way into the running machine (as the web terminal goes in). */
export function machineExec(compute: ComputeDriver, instanceId: string): MachineExec {
  return {
    run: (script, stdin) => {
      const cmd = compute.shell?.(instanceId, ['/bin/sh', '-c', script]);
      if (!cmd) return Promise.reject(new Error('训练机未运行或无法进入，请检查 KOHYA_INSTANCE_ID 对应的实例'));
      return spawnCollect(cmd.file, cmd.args, cmd.env, stdin);
    },
  };
}

/** Commands on this host (a training machine the console runs on, and tests). */
export function hostExec(env: Record<string, string> = {}): MachineExec {
  return { run: (script, stdin) => spawnCollect('/bin/sh', ['-c', script], { ...process.env, ...env } as Record<string, string>, stdin) };
}

/** What one poll reads of the training log: a machine's root can write without end, the next poll reads on. */
const LOG_READ_MAX = 1024 * 1024;
/** The largest output a command on the training machine may give (a LoRA file read whole); past it the command fails. */
const OUTPUT_MAX = 1024 ** 3;
/** What is kept of a command's error output: its last few KB. */
const ERROR_MAX = 4096;

/**
 * Runs a command to its end with its output. The training machine is the user's: what its root
 * prints is bounded — the output to OUTPUT_MAX (then the command is ended and fails), the error
 * output to its last ERROR_MAX bytes.
 */
function spawnCollect(file: string, args: string[], env: Record<string, string>, stdin?: Buffer): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = Buffer.alloc(0);
    child.stdout.on('data', (c: Buffer) => {
      outBytes += c.length;
      if (outBytes > OUTPUT_MAX) {
        child.kill('SIGKILL');
        child.stdout.destroy();
        reject(new Error(`训练机命令输出超过 ${OUTPUT_MAX / 1024 ** 3} GB，已终止`));
        return;
      }
      out.push(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      err = Buffer.concat([err, c]);
      if (err.length > 2 * ERROR_MAX) err = Buffer.from(err.subarray(err.length - ERROR_MAX));
    });
    child.once('error', reject);
    child.once('close', (code) =>
      resolve({ code: code ?? 1, stdout: Buffer.concat(out), stderr: err.subarray(Math.max(0, err.length - ERROR_MAX)).toString() }),
    );
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}
