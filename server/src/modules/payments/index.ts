/** The payments module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './refunds.js';
export * from './routes.js';
export * from './sandbox-store.js';
export * from './module.js';
