/** The model module's public entry (issue 14): the model square and channels, API keys, the /v1 gateway, usage stats and the online experience's conversations. */
export * from './catalogue.js';
export * from './keys.js';
export * from './routes.js';
export * from './gateway.js';
export * from './gateway-routes.js';
export * from './usage.js';
export * from './conversations.js';
export * from './module.js';
