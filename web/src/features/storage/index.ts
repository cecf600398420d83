export { STORAGE_KEYS, storageApi } from './api/storage';
