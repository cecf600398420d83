/** The instances module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './routes.js';
export * from './billing.js';
export * from './conversions.js';
export * from './create.js';
export * from './disks.js';
export * from './migrate.js';
export * from './prepaid.js';
export * from './reconciler.js';
export * from './renewal.js';
export * from './save-image.js';
export * from './scheduled-stop.js';
export * from './secrets.js';
export * from './tasks.js';
export * from './traffic-refund.js';
export * from './traffic.js';
export * from './views.js';
