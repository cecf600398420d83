/** The ledger module's public entry: what other modules and the composition root may use. */
export * from './accounts.js';
export * from './service.js';
export * from './holds.js';
export * from './routes.js';
export * from './check.js';
export * from './module.js';
