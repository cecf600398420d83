/** The notices module's public entry: what other modules and the composition root may use. */
export * from './kinds.js';
export * from './service.js';
export * from './subscriptions.js';
export * from './routes.js';
export * from './module.js';
