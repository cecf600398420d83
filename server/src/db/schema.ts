/**
 * Every table of the server, assembled for the database client and drizzle-kit (migrations).
 * Each module declares its own tables in its `schema.ts`; no other module imports them.
 */
export * from '../modules/users/schema.js';
export * from '../modules/certification/schema.js';
export * from '../modules/students/schema.js';
export * from '../modules/system/schema.js';
export * from '../modules/verification/schema.js';
export * from '../drivers/outbox-schema.js';
export * from '../drivers/counters/schema.js';
export * from '../modules/catalogue/schema.js';
export * from '../modules/vouchers/schema.js';
export * from '../modules/ledger/schema.js';
export * from '../modules/payments/schema.js';
export * from '../modules/recharge/schema.js';
export * from '../modules/gifts/schema.js';
export * from '../modules/orders/schema.js';
export * from '../modules/resources/schema.js';
export * from '../modules/invoices/schema.js';
export * from '../modules/instances/schema.js';
export * from '../modules/images/schema.js';
export * from '../modules/datasets/schema.js';
export * from '../modules/training/schema.js';
export * from '../modules/diffusion/schema.js';
export * from '../modules/comfyui/schema.js';
export * from '../modules/notices/schema.js';
export * from '../modules/monitoring/schema.js';
export * from '../modules/operator/schema.js';
export * from '../drivers/compute/simulated-schema.js';
export * from '../drivers/compute/local/schema.js';
export * from '../drivers/compute/fleet-schema.js';
export * from '../modules/model/schema.js';
export * from '../modules/access/schema.js';
export * from '../jobs/schema.js';
