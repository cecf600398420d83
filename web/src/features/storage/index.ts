export { STORAGE_KEYS, storageApi, storageQueries } from './api/storage';
