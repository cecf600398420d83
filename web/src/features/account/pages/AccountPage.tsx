import { Card, Tabs } from 'antd';
import { PageFrame } from '../../../components/PageFrame';
import { useUrlState } from '../../../routing/useUrlState';
import { useSession } from '../../../session/useSession';
import { BasicInfoTab } from '../components/BasicInfoTab';
import { CertificationTab } from '../components/CertificationTab';
import { ChildrenTab } from '../components/ChildrenTab';
import { NoticesTab } from '../components/NoticesTab';
import { SecurityTab } from '../components/SecurityTab';
import { SshKeysTab } from '../components/SshKeysTab';
import { StudentTab } from '../components/StudentTab';

const TABS = ['basic', 'checkInfo', 'student', 'children', 'security', 'sshKeys', 'notices'] as const;
type Tab = (typeof TABS)[number];
/** What a child account manages itself; the rest is its parent's. Its SSH keys open the instances it may manage. */
const CHILD_TABS: readonly Tab[] = ['basic', 'security', 'sshKeys', 'notices'];

/** 账号中心 (spec §2): `?tab=checkInfo` opens certification, as the real-name gate expects. */
export default function AccountPage() {
  const { user } = useSession();
  const allowed = user?.isChild ? CHILD_TABS : TABS;
  const tab = useUrlState(
    (p) => {
      const t = p.get('tab') as Tab | null;
      return t && allowed.includes(t) ? t : 'basic';
    },
    (t) => new URLSearchParams(t === 'basic' ? {} : { tab: t }),
  );
  const items = [
    { key: 'basic', label: '基本信息', children: <BasicInfoTab /> },
    { key: 'checkInfo', label: '实名认证', children: <CertificationTab /> },
    { key: 'student', label: '学生认证', children: <StudentTab /> },
    { key: 'children', label: '子账号', children: <ChildrenTab /> },
    { key: 'security', label: '安全设置', children: <SecurityTab /> },
    { key: 'sshKeys', label: 'SSH 公钥', children: <SshKeysTab /> },
    { key: 'notices', label: '消息通知', children: <NoticesTab /> },
  ].filter((i) => allowed.includes(i.key as Tab));
  return (
    <PageFrame>
      <Card>
        <Tabs activeKey={tab.value} onChange={(k) => tab.set(k as Tab)} items={items} destroyOnHidden />
      </Card>
    </PageFrame>
  );
}
