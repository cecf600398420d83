import { InstanceListPage } from '../components/InstanceListPage';

/** GPU 实例（/console/gpu-generic）: the account's instances of category Gpu. */
export default function GpuGenericPage() {
  return <InstanceListPage category="Gpu" />;
}
