/**
 * The storage feature (我的数据: images, data disks, file storage and the image share page): what other
 * features may use of it. Anything not exported here is its own business (eslint.config.js,
 * import-x/no-restricted-paths).
 */
export { STORAGE_KEYS, storageApi, storageQueries } from './api/storage';
