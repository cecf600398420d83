/** 文件存储: the account's file tree, shared by its local instances (/root/shared) and the console. */
export * from './store.js';
export * from './routes.js';
export * from './module.js';
