/** Ways into a running instance (web terminal; SSH, notebook, service port and desktop to come): who may, and the connections. */
export * from './gate.js';
export * from './terminal.js';
export * from './routes.js';
export * from './ssh-gateway.js';
export * from './machine-proxy.js';
