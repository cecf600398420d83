export * from './errors.js';
export * from './enums.js';
export * from './money.js';
export * from './api-paths.js';
export * from './web-paths.js';
export * from './schemas/common.js';
export * from './schemas/user.js';
export * from './schemas/catalogue.js';
