/** The image generation module's wiring: its service and routes, from only what they use. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { PainterDriver } from '../../drivers/image-backend/types.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { ResourceService } from '../resources/index.js';
import { diffusionRoutes } from './routes.js';
import { DiffusionService, type OwnLoras } from './service.js';

export interface DiffusionModuleDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  storage: StorageDriver;
  /** The GPU's hourly rate an image is priced at. */
  catalogue: CatalogueService;
  /** The account's trained LoRAs (the training module's). */
  training: OwnLoras;
  resources: ResourceService;
  painter: PainterDriver;
  /** The ComfyUI that runs workflow tasks. */
  comfy: PainterDriver;
  auth: AuthGuards;
  /** Tasks the backend runs at once (PAINTER_CAPACITY). */
  capacity: number;
  /** How often the runner ticks (IMAGE_BACKEND_TICK_MS). */
  tickMs: number;
}

export function diffusionModule(deps: DiffusionModuleDeps) {
  const { db, clock, ledger, storage, catalogue, training, resources, painter, comfy, auth, capacity, tickMs } = deps;
  const diffusion = new DiffusionService({ db, clock, ledger, storage, catalogue, training, resources, painter, comfy, capacity, tickMs });
  const routes: RoutesPlugin = async (app) => diffusionRoutes(app, { auth, diffusion });
  return { diffusion, routes };
}
