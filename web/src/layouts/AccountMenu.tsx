import { Avatar, Dropdown, Space, type MenuProps } from 'antd';
import { DownOutlined, UserOutlined } from '@ant-design/icons';
import { useNavigate } from 'react-router';
import { PAGE, type User } from '@console/contract';
import { useSession } from '../session/useSession';

/** What to call the user: nickname, else child-account name, else the masked mobile. */
export function displayName(user: User | null): string {
  if (!user) return '我的账号';
  if (user.nickname) return user.nickname;
  if (user.isChild && user.childName) return user.childName;
  if (user.mobile) return user.mobile.replace(/^(\d{3})\d{4}(\d{4})$/, '$1****$2');
  return user.email || '我的账号';
}

export function AccountMenu() {
  const { user, signOut } = useSession();
  const navigate = useNavigate();
  const items: MenuProps['items'] = [
    { key: PAGE.account, label: '账号信息' },
    { key: PAGE.balance, label: '费用中心' },
    { type: 'divider' },
    { key: 'logout', label: '退出登录', danger: true },
  ];
  const onClick: MenuProps['onClick'] = async ({ key }) => {
    if (key !== 'logout') return void navigate(key);
    await signOut();
    navigate(PAGE.login, { replace: true });
  };
  return (
    <Dropdown menu={{ items, onClick }} placement="bottomRight">
      <Space style={{ cursor: 'pointer' }} aria-label="账号菜单">
        <Avatar size="small" src={user?.logo || undefined} icon={<UserOutlined />} />
        <span>{displayName(user)}</span>
        <DownOutlined style={{ fontSize: 10 }} />
      </Space>
    </Dropdown>
  );
}
