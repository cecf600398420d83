/** The notices module's wiring: notices that arrive, 有卡时通知我, and their routes. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore } from '../catalogue/index.js';
import { noticeRoutes } from './routes.js';
import { NoticeService, type NoticeDeps } from './service.js';
import { GpuSubscriptionService } from './subscriptions.js';

export interface NoticesModuleDeps extends NoticeDeps {
  /** Which GPUs are in stock, for the subscriptions. */
  catalogue: CatalogueStore;
  auth: AuthGuards;
}

export function noticesModule(deps: NoticesModuleDeps) {
  const { auth, catalogue, ...noticeDeps } = deps;
  const notices = new NoticeService(noticeDeps);
  const gpuSubscriptions = new GpuSubscriptionService({ db: deps.db, clock: deps.clock, catalogue, notices });
  const routes: RoutesPlugin = async (app) => noticeRoutes(app, { auth, notices, gpuSubscriptions });
  return { notices, gpuSubscriptions, routes };
}
