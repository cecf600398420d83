export { DATASET_KEYS, datasetApi, datasetQueries } from './api/datasets';
export { datasetDetailPath, datasetUploadPath } from './utils/paths';
