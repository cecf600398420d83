import { Button, Flex, Layout, Menu } from 'antd';
import { Link, Outlet, useLocation, useNavigate } from 'react-router';
import { PAGE } from '@console/contract';
import { useSession } from '../session/useSession';
import { AccountMenu } from './AccountMenu';
import { Logo } from './Logo';

const NAV = [
  { key: PAGE.cloudGpu, label: 'GPU 云' },
  { key: PAGE.cloudApply, label: '镜像应用' },
  { key: PAGE.statsGame, label: '云游戏' },
  { key: PAGE.enterprise, label: '企业' },
];

/** The public site frame for /stats/*: product navigation, and login or the account menu. */
export default function PublicLayout() {
  const { loggedIn } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const here = encodeURIComponent(location.pathname + location.search);
  return (
    <Layout style={{ minHeight: '100vh' }}>
      <Layout.Header className="app-header">
        <Flex align="center" gap={32} style={{ flex: 1, minWidth: 0 }}>
          <Logo />
          <Menu
            mode="horizontal"
            items={NAV}
            selectedKeys={[location.pathname]}
            onClick={({ key }) => navigate(key)}
            style={{ flex: 1, minWidth: 0, borderBottom: 'none' }}
            aria-label="产品导航"
          />
        </Flex>
        {loggedIn ? (
          <Flex gap={16} align="center">
            <Button type="primary" onClick={() => navigate(PAGE.gpuGeneric)}>
              控制台
            </Button>
            <AccountMenu />
          </Flex>
        ) : (
          <Flex gap={8}>
            <Link to={`${PAGE.login}?redirect=${here}`}>
              <Button>登录</Button>
            </Link>
            <Link to={`${PAGE.register}?redirect=${here}`}>
              <Button type="primary">注册</Button>
            </Link>
          </Flex>
        )}
      </Layout.Header>
      <Layout.Content className="app-content">
        <Outlet />
      </Layout.Content>
    </Layout>
  );
}
