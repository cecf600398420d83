/**
 * The datasets feature (the AI 绘图 datasets that LoRA training reads): what other features may use of
 * it. Anything not exported here is its own business (eslint.config.js, import-x/no-restricted-paths).
 */
export { DATASET_KEYS, datasetApi, datasetQueries } from './api/datasets';
export { datasetDetailPath, datasetUploadPath } from './utils/paths';
