import { InstanceListPage } from '../components/InstanceListPage';

/** CPU 实例（/console/generic/cpu）: the account's instances of category Generic. */
export default function CpuPage() {
  return <InstanceListPage category="Generic" />;
}
