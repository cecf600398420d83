import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { UserService } from '../users/index.js';
import { imageRoutes } from './routes.js';
import { ImageService } from './service.js';

export interface ImagesModuleDeps {
  db: Db;
  clock: Clock;
  auth: AuthGuards;
  catalogue: CatalogueStore;
  /** Who owns a shared image (the share page names them, masked). */
  users: Pick<UserService, 'contactsOf'>;
  /** Where saved images live (their layers; dropping a deleted one). */
  compute?: Pick<ComputeDriver, 'imageInfo' | 'removeImage'>;
  log?: (msg: string) => void;
}

/** My images: saved from instances (the instances module saves them), listed, renamed, shared (by link and by code) and deleted here. */
export function imagesModule(deps: ImagesModuleDeps) {
  const images = new ImageService({ db: deps.db, clock: deps.clock, catalogue: deps.catalogue, users: deps.users, compute: deps.compute, log: deps.log });
  const routes: RoutesPlugin = async (app) => imageRoutes(app, { auth: deps.auth, images });
  return { images, routes };
}
