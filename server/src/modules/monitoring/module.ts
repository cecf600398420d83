/** The monitoring module's wiring: the 概览 figures, their jobs and GPU 空闲自动关机. */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { InstanceService } from '../instances/index.js';
import type { NoticeService } from '../notices/index.js';
import { IdleStops } from './idle-stop.js';
import { Monitoring } from './monitoring.js';
import { monitoringRoutes } from './routes.js';
import { MetricStore } from './store.js';

export interface MonitoringModuleDeps {
  db: Db;
  clock: Clock;
  auth: AuthGuards;
  driver: Pick<ComputeDriver, 'name' | 'sample'>;
  instances: Pick<InstanceService, 'mustFind' | 'actAsSystem' | 'accessOf'>;
  notices: Pick<NoticeService, 'send'>;
}

export function monitoringModule(deps: MonitoringModuleDeps) {
  const { db, clock, instances } = deps;
  const idleStops = new IdleStops({ db, clock, instances, notices: deps.notices });
  const monitoring = new Monitoring({ clock, driver: deps.driver, store: new MetricStore({ db }), idle: idleStops, instances });
  const routes: RoutesPlugin = async (app) => monitoringRoutes(app, { auth: deps.auth, monitoring, idleStops });
  return { monitoring, idleStops, routes };
}
