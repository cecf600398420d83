import { InstanceListPage } from '../components/InstanceListPage';

/** 镜像应用（/console/app）: the account's instances of category App. */
export default function AppPage() {
  return <InstanceListPage category="App" />;
}
