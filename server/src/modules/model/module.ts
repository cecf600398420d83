/**
 * The model service's wiring: the model square and its channels, API keys, the /v1 gateway, usage
 * stats and the online experience's conversations, with the console's routes and the gateway's.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { Counters } from '../../drivers/counters/index.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore } from '../catalogue/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { ResourceService } from '../resources/index.js';
import type { SessionService, UserService } from '../users/index.js';
import { ModelCatalogue } from './catalogue.js';
import { ConversationService } from './conversations.js';
import { ModelGateway } from './gateway.js';
import { gatewayRoutes } from './gateway-routes.js';
import { ApiKeyService } from './keys.js';
import { modelRoutes } from './routes.js';
import { ModelUsage } from './usage.js';

export interface ModelModuleDeps {
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  /** The catalogue file's models and modelChannels. */
  catalogue: CatalogueStore;
  ledger: LedgerService;
  /** Token packages, drawn before the cash. */
  resources: ResourceService;
  users: UserService;
  /** The online experience calls /v1 with the console's session token. */
  sessions: SessionService;
  auth: AuthGuards;
  /** The embedded model's output pace (MODEL_EMBEDDED_TOKENS_PER_SECOND; unset, its default). */
  embeddedTokensPerSecond: number | undefined;
  /** How long the call log is kept (MODEL_CALL_RETENTION_DAYS). */
  callRetentionDays: number;
  /** Where keys' requests and tokens per minute are counted, shared by the replicas (drivers/counters). */
  counters: Counters;
}

export function modelModule(deps: ModelModuleDeps) {
  const { db, clock, log, catalogue, ledger, resources, users, sessions, auth, embeddedTokensPerSecond } = deps;
  const models = new ModelCatalogue({ catalogue, clock, log, ...(embeddedTokensPerSecond ? { embeddedTokensPerSecond } : {}) });
  const apiKeys = new ApiKeyService({
    db,
    clock,
    users,
    models,
    counters: deps.counters,
    onError: (e) => log.error({ err: e }, '限流计数服务不可用：有速率限制的密钥的调用暂时被拒绝（503）'),
  });
  const modelGateway = new ModelGateway({ db, clock, ledger, apiKeys, resources, onError: (e) => log.error({ err: e }, 'model float write failed') });
  const modelUsage = new ModelUsage({ db, clock, retentionDays: deps.callRetentionDays });
  const conversations = new ConversationService({ db, clock, models });
  const routes: RoutesPlugin = async (app) => {
    await app.register(async (scope) => modelRoutes(scope, { auth, models, apiKeys, modelUsage, conversations }));
    // The OpenAI-compatible gateway: its own scope, errors in OpenAI's shape (not the console envelope).
    await app.register(async (scope) => gatewayRoutes(scope, { gateway: modelGateway, models, apiKeys, sessions }));
  };
  return { models, apiKeys, modelGateway, modelUsage, conversations, routes };
}
