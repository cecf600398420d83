import { InstanceListPage } from '../components/InstanceListPage';

/** 云桌面（/console/desktop）: the account's instances of category Desktop. */
export default function DesktopPage() {
  return <InstanceListPage category="Desktop" />;
}
