/** Ways into a running instance: web terminal, SSH, the machines' web services (on an origin of their own) and desktop: who may, and the connections. */
export * from './gate.js';
export * from './terminal.js';
export * from './routes.js';
export * from './ssh-gateway.js';
export * from './machine-proxy.js';
export * from './machine-origin.js';
export * from './ssh-keys.js';
export * from './module.js';
