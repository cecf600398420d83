import { InstanceListPage } from '../components/InstanceListPage';

/** 跨境电商（/console/e-business）: the account's instances of category Ebusiness. */
export default function EbusinessPage() {
  return <InstanceListPage category="Ebusiness" />;
}
