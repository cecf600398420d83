/** The users module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './sessions.js';
export * from './routes.js';
export * from './passwords.js';
export * from './children.js';
export * from './children-routes.js';
export * from './balance-floor.js';
export * from './module.js';
