/** The operator module's public entry: what other modules and the composition root may use. */
export * from './service.js';
export * from './routes.js';
export * from './module.js';
export * from './registered-images.js';
export * from './roles.js';
export * from './audit.js';
