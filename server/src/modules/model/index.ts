/** The model module's public entry (issue 14): the model square and channels, and API keys. The /v1 gateway builds on these. */
export * from './catalogue.js';
export * from './keys.js';
export * from './routes.js';
export * from './gateway.js';
export * from './gateway-routes.js';
