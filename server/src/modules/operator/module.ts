/** The operator module's wiring: the operator's credits, reviews and model channels, and who may act as the operator. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { GiftService } from '../gifts/index.js';
import type { LedgerService } from '../ledger/index.js';
import { operatorCheck, operatorRoutes, type OperatorRoutesDeps } from './routes.js';
import { OperatorService } from './service.js';
import { RegisteredImages, type RegisteredImagesDeps } from './registered-images.js';

export interface OperatorModuleDeps extends Omit<OperatorRoutesDeps, 'operatorOf' | 'operator' | 'registeredImages'> {
  auth: AuthGuards;
  ledger: LedgerService;
  gifts: GiftService;
  /** The token `npm start` sets once the server runs (main.ts), read at each request. */
  localOperatorToken: () => string | null;
  /** 镜像登记: where references are checked (the registry or the host's layout), and which instances use an image. */
  imageRegistration: Pick<RegisteredImagesDeps, 'registrar' | 'inUse' | 'log'>;
}

export function operatorModule(deps: OperatorModuleDeps) {
  const { auth, ledger, gifts, localOperatorToken, imageRegistration, ...routesDeps } = deps;
  const operator = new OperatorService({ db: deps.db, ledger, gifts, users: deps.users });
  const operatorOf = operatorCheck({ auth, users: deps.users, localOperatorToken });
  const registeredImages = new RegisteredImages({ db: deps.db, clock: deps.clock, catalogue: deps.catalogueStore, ...imageRegistration });
  // What a restart cut short is pulled again (the catalogue offers a registered image only once the host has it).
  void registeredImages.resume().catch((e: unknown) => imageRegistration.log(`镜像登记：检查本机镜像失败：${String(e)}`));
  const routes: RoutesPlugin = async (app) => operatorRoutes(app, { ...routesDeps, operator, operatorOf, registeredImages });
  return { operator, operatorOf, registeredImages, routes };
}
