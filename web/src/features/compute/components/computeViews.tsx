/** Pieces the compute center's pages share: their links, the GPU names and card hours as read. */
import { useQuery } from '@tanstack/react-query';
import { PAGE } from '@console/contract';
import { catalogueQueries } from '../../market';
import { useUrlState } from '../../../routing/useUrlState';

export type ComputeTab = 'shop' | 'mine';

/** The center's tab, kept in the URL (?tab=shop|mine) so a reload or a shared link opens it again; 算力商城 unless told. */
export function useComputeTab() {
  return useUrlState(
    (p): ComputeTab => (p.get('tab') === 'mine' ? 'mine' : 'shop'),
    (tab: ComputeTab) => new URLSearchParams({ tab }),
  );
}

export const computeTabPath = (tab: ComputeTab) => `${PAGE.computeCenter}?tab=${tab}`;
export const computeDetailPath = (packageId: string) => `${PAGE.computeDetail}?id=${encodeURIComponent(packageId)}`;
/** A LoRA job's detail opens as the drawer of the training page. */
export const trainJobPath = (jobId: string) => `${PAGE.sdTrain}?job=${encodeURIComponent(jobId)}`;
/** The instance detail finds the instance whatever the type in its path, and moves to its own. */
export const instancePath = (instanceId: string) => PAGE.ipvmDetail.replace(':type', 'Gpu').replace(':id', encodeURIComponent(instanceId));

/** GPU type names by id from the catalogue (the id itself until they arrive, or when unknown). */
export function useGpuNames() {
  const gpuTypes = useQuery(catalogueQueries.gpuTypes());
  return {
    name: (id: string) => gpuTypes.data?.find((g) => g.id === id)?.name ?? id,
    memoryGb: (id: string) => gpuTypes.data?.find((g) => g.id === id)?.memoryGb,
  };
}

/** A metered amount as the server sends it (up to 4 decimals), without trailing zeros: "0.0125", "2". */
export function trimDecimal(amount: string): string {
  if (!amount.includes('.')) return amount;
  const [whole = '0', frac = ''] = amount.split('.');
  const kept = frac.slice(0, 4).replace(/0+$/, '');
  return kept ? `${whole}.${kept}` : whole;
}
