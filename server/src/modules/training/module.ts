/** The LoRA training module's wiring: its service and routes, from only what they use. */
import type { Clock } from '../../clock.js';
import type { Bus } from '../../db/bus.js';
import type { Db } from '../../db/client.js';
import type { TrainerDriver } from '../../drivers/image-backend/types.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { DatasetService } from '../datasets/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { ResourceService } from '../resources/index.js';
import { trainingRoutes } from './routes.js';
import { TrainingService } from './service.js';

export interface TrainingModuleDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
  storage: StorageDriver;
  datasets: DatasetService;
  /** The GPU's hourly rate a job is priced at. */
  catalogue: CatalogueService;
  resources: ResourceService;
  trainer: TrainerDriver;
  auth: AuthGuards;
  /** Jobs the backend runs at once (TRAINER_CAPACITY). */
  capacity: number;
  /** How often the runner ticks (IMAGE_BACKEND_TICK_MS); the progress stream's own look is no more often. */
  tickMs: number;
  /** Carries "a job changed" to every replica's progress streams. */
  bus: Pick<Bus, 'publish' | 'subscribe'>;
}

export function trainingModule(deps: TrainingModuleDeps) {
  const { db, clock, ledger, storage, datasets, catalogue, resources, trainer, auth, capacity, tickMs, bus } = deps;
  const training = new TrainingService({ db, clock, ledger, storage, datasets, catalogue, resources, trainer, capacity, tickMs, bus });
  const routes: RoutesPlugin = async (app) => trainingRoutes(app, { auth, training, tickMs, bus });
  return { training, routes };
}
