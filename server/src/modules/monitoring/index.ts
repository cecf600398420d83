/** The monitoring module's public entry: what the composition root and the scheduler may use. */
export * from './monitoring.js';
export * from './idle-stop.js';
export * from './store.js';
export * from './module.js';
