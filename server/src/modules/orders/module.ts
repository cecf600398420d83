import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { CatalogueStore, Quotes } from '../catalogue/index.js';
import type { GiftService } from '../gifts/index.js';
import type { LedgerService } from '../ledger/index.js';
import type { PaymentService } from '../payments/index.js';
import type { VoucherService } from '../vouchers/index.js';
import { Checkout } from './checkout.js';
import { Fulfillers, type FulfillerOf } from './fulfillers.js';
import { PurchaseService, type ResourcePricing } from './purchase.js';
import { orderRoutes } from './routes.js';
import { OrderService } from './service.js';
import { ChildSpending, type ChildLimitLookup } from './spending.js';
import { UsageCharges, type HourlyLoad } from './usage.js';

export interface OrdersModuleDeps {
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  auth: AuthGuards;
  ledger: LedgerService;
  gifts: GiftService;
  vouchers: VoucherService;
  payments: PaymentService;
  catalogue: CatalogueStore;
  /** The server's quotes of what is bought. */
  pricing: Quotes;
  /** Model resource packages' prices (the resources module's). */
  resources: ResourcePricing;
  /** Child accounts' spending limits (the users module's), held against what their orders took. */
  spendLimitsOf: ChildLimitLookup;
  /** Who delivers each (category, order type): the modules that sell them. */
  fulfillerOf: FulfillerOf;
  /** What the payer's post-paid runs of each domain already take an hour. */
  hourlyLoads: readonly HourlyLoad[];
  /** REQUIRE_REALNAME_FOR_PURCHASE */
  requireRealName: boolean;
}

/** Orders: buying, paying, fulfilment through the selling modules, post-paid charging and child accounts' spending. */
export function ordersModule(deps: OrdersModuleDeps) {
  const { db, clock, ledger, gifts } = deps;
  const fulfillers = new Fulfillers(deps.fulfillerOf);
  // Every payment, post-paid start and tick respects children's limits.
  const spending = new ChildSpending({ db, clock, limitsOf: deps.spendLimitsOf });
  const usage = new UsageCharges({ clock, ledger, gifts, spending, hourlyLoads: deps.hourlyLoads });
  const checkout = new Checkout({ db, clock, ledger, gifts, vouchers: deps.vouchers, payments: deps.payments, fulfillers, log: deps.log, spending });
  const orders = new OrderService({ db, clock, catalogue: deps.catalogue, fulfillers, checkout, usage, ledger });
  const purchase = new PurchaseService({
    db,
    clock,
    orders,
    usage,
    fulfillers,
    pricing: deps.pricing,
    resources: deps.resources,
    requireRealName: deps.requireRealName,
  });
  const routes: RoutesPlugin = async (app) => orderRoutes(app, { auth: deps.auth, clock, orders, purchase, checkout });
  return { fulfillers, spending, usage, checkout, orders, purchase, routes };
}
