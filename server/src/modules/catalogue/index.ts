/** The catalogue module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './versions.js';
export * from './routes.js';
export * from './inventory.js';
export * from './pricing.js';
export * from './seed-file.js';
export { lockPublished, writePublished, type PublishedCatalogue } from './published.js';
export * from './store.js';
export * from './model-channels.js';
export * from './quotes.js';
export * from './lookups.js';
export { freeCardsOf, hostMarket, saleLimits, type HostMarket } from './host-market.js';
export * from './module.js';
