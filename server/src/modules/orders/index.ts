/** The orders module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './routes.js';
export * from './checkout.js';
export * from './fulfillers.js';
export * from './purchase.js';
export * from './usage.js';
export * from './spending.js';
export * from './module.js';
