export { DATASET_KEYS, datasetApi } from './api/datasets';
export { datasetDetailPath, datasetUploadPath } from './utils/paths';
