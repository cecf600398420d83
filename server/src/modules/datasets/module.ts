/** The datasets module's wiring: its service and routes, from only what they use. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { UserService } from '../users/index.js';
import { datasetRoutes } from './routes.js';
import { DatasetService } from './service.js';

export interface DatasetsModuleDeps {
  db: Db;
  clock: Clock;
  storage: StorageDriver;
  users: UserService;
  auth: AuthGuards;
}

export function datasetsModule(deps: DatasetsModuleDeps) {
  const { db, clock, storage, users, auth } = deps;
  const datasets = new DatasetService({ db, clock, storage, users });
  const routes: RoutesPlugin = async (app) => datasetRoutes(app, { auth, datasets });
  return { datasets, routes };
}
