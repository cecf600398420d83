import { InstanceListPage } from '../components/InstanceListPage';

/** 云游戏（/console/game）: the account's instances of category Game. */
export default function GamePage() {
  return <InstanceListPage category="Game" />;
}
