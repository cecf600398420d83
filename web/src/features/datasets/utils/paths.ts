import { PAGE } from '@console/contract';

/** Where a dataset's pages live; the training form links to them too. */
export const datasetDetailPath = (id: string) => `${PAGE.sdDatasetDetail}?id=${id}`;
export const datasetUploadPath = (id: string) => `${PAGE.sdDatasetUpload}?id=${id}`;
