/** The ComfyUI area's wiring: workflows and their routes, from only what they use. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { EmbeddedComfyApps } from '../../drivers/image-backend/comfy-apps.js';
import type { PainterDriver } from '../../drivers/image-backend/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { DiffusionService } from '../diffusion/index.js';
import { comfyuiRoutes } from './routes.js';
import { ComfyWorkflowService } from './service.js';

export interface ComfyuiModuleDeps {
  db: Db;
  clock: Clock;
  /** Runs and quotes workflows as generation tasks. */
  diffusion: DiffusionService;
  auth: AuthGuards;
  /** Closed with the server: the ComfyUI that runs workflows and the applications' embedded ComfyUI. */
  comfy: PainterDriver;
  comfyApps: EmbeddedComfyApps;
}

export function comfyuiModule(deps: ComfyuiModuleDeps) {
  const { db, clock, diffusion, auth, comfy, comfyApps } = deps;
  const comfyWorkflows = new ComfyWorkflowService({ db, clock, diffusion });
  const routes: RoutesPlugin = async (app) => comfyuiRoutes(app, { auth, workflows: comfyWorkflows, diffusion, comfy, comfyApps });
  return { comfyWorkflows, routes };
}
