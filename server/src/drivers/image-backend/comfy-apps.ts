/**
 * The ComfyUI of ComfyUI application instances on the fleets that do not run applications
 * themselves (the local sandboxes, the simulated fleet): an embedded ComfyUI per running instance,
 * on a Unix socket of its own, which the machine proxy serves at the root of the instance's origin.
 * It runs at a GPU's pace (speedup 1, the real clock); stopping the instance stops it.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock, type Clock } from '../../clock.js';
import { EmbeddedComfy } from './embedded-comfy.js';

export class EmbeddedComfyApps {
  private readonly dir = path.join(tmpdir(), `console-apps-${process.pid}`);
  private apps = new Map<string, { comfy: EmbeddedComfy; socket: Promise<string> }>();

  constructor(private clock: Clock = systemClock) {}

  /** The instance's ComfyUI socket, started on first use. */
  async socketOf(instanceId: string): Promise<string> {
    let app = this.apps.get(instanceId);
    if (!app) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const where = path.join(this.dir, `${instanceId}.sock`);
      rmSync(where, { force: true });
      const comfy = new EmbeddedComfy(this.clock, 1, 100);
      app = { comfy, socket: comfy.socket(where) };
      this.apps.set(instanceId, app);
    }
    return app.socket;
  }

  /** The instance stopped or was released: its ComfyUI (queue, history, pictures) goes with it. */
  async stop(instanceId: string): Promise<void> {
    const app = this.apps.get(instanceId);
    if (!app) return;
    this.apps.delete(instanceId);
    await app.comfy.close();
  }

  /** The instances whose ComfyUI runs here. */
  running(): string[] {
    return [...this.apps.keys()];
  }

  /** Stops the ComfyUI of each instance that no longer runs one (stopped, released); how many it stopped. */
  async sweep(stillRunning: (instanceId: string) => Promise<boolean>): Promise<number> {
    let stopped = 0;
    for (const id of this.running()) {
      if (await stillRunning(id)) continue;
      await this.stop(id);
      stopped++;
    }
    return stopped;
  }

  async close(): Promise<void> {
    await Promise.all([...this.apps.keys()].map((id) => this.stop(id)));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
