/** The operator module's wiring: roles and the guard, the audit trail, credits and their approvals, reviews, model channels and registered images. */
import { yuanToUnits, type OperatorPermission } from '@console/contract';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { GiftService } from '../gifts/index.js';
import type { LedgerService } from '../ledger/index.js';
import { operatorRoutes, type OperatorCheck, type OperatorRoutesDeps } from './routes.js';
import { OperatorService } from './service.js';
import { RegisteredImages, type RegisteredImagesDeps } from './registered-images.js';
import { OperatorAudit, originOf, type AuditEvent } from './audit.js';
import { actorOf, operatorGuard, OperatorRoles } from './roles.js';
import type { FastifyRequest } from 'fastify';

export interface OperatorModuleDeps extends Omit<OperatorRoutesDeps, 'requirePermission' | 'audit' | 'roles' | 'operator' | 'registeredImages'> {
  auth: AuthGuards;
  ledger: LedgerService;
  gifts: GiftService;
  /** The token `npm start` sets once the server runs (main.ts), read at each request. */
  localOperatorToken: () => string | null;
  /** 镜像登记: where references are checked (the registry or the host's layout), and which instances use an image. */
  imageRegistration: Pick<RegisteredImagesDeps, 'registrar' | 'inUse' | 'log'>;
  /** OPERATOR_APPROVAL_THRESHOLD_YUAN. */
  approvalThresholdYuan: number;
}

export function operatorModule(deps: OperatorModuleDeps) {
  const { auth, ledger, gifts, localOperatorToken, imageRegistration, approvalThresholdYuan, ...routesDeps } = deps;
  const roles = new OperatorRoles({ db: deps.db, clock: deps.clock, operatorMobiles: deps.operatorMobiles });
  const audit = new OperatorAudit({ db: deps.db, clock: deps.clock, users: deps.users });
  const requirePermission = operatorGuard({ auth, roles, localOperatorToken });
  const approvalThreshold = yuanToUnits(String(approvalThresholdYuan));
  const operator = new OperatorService({ db: deps.db, ledger, gifts, users: deps.users, clock: deps.clock, audit, approvalThreshold });
  const registeredImages = new RegisteredImages({ db: deps.db, clock: deps.clock, catalogue: deps.catalogueStore, ...imageRegistration });
  // What a restart cut short is pulled again (the catalogue offers a registered image only once the host has it).
  void registeredImages.resume().catch((e: unknown) => imageRegistration.log(`镜像登记：检查本机镜像失败：${String(e)}`));
  const routes: RoutesPlugin = async (app) => operatorRoutes(app, { ...routesDeps, requirePermission, audit, roles, operator, registeredImages });
  /** Other modules' operator routes: the guard for `permission`, answering the operator's id (null: the local command). */
  const operatorOf =
    (permission: OperatorPermission): OperatorCheck =>
    async (req) =>
      (await requirePermission(permission)(req)).userId;
  /** Records an action of the operator the guard admitted on `req` (other modules' operator routes). */
  const auditOf = async (req: FastifyRequest, event: AuditEvent) => {
    const actor = actorOf(req);
    if (actor) await audit.record(actor, originOf(req), event);
  };
  return { operator, operatorOf, requirePermission, audit, auditOf, roles, registeredImages, routes };
}
