import { lazy, Suspense } from 'react';
import { Button, Flex, Layout } from 'antd';
import { Link, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { PAGE } from '@console/contract';
import { useSession } from '../session/useSession';
import { Logo } from './Logo';
import './PublicNav.css';

const NAV = [
  { to: PAGE.cloudGpu, label: 'GPU 云' },
  { to: PAGE.cloudApply, label: '镜像应用' },
  { to: PAGE.statsGame, label: '云游戏' },
  { to: PAGE.enterprise, label: '企业' },
];

// The market is the site's front page and most visitors are not logged in: the dropdown (antd
// Dropdown and Menu) loads only for those who have an account menu to open.
const AccountMenu = lazy(() => import('./AccountMenu').then((m) => ({ default: m.AccountMenu })));

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
          <nav className="public-nav" aria-label="产品导航">
            {NAV.map((item) => (
              <NavLink key={item.to} to={item.to}>
                {item.label}
              </NavLink>
            ))}
          </nav>
        </Flex>
        {loggedIn ? (
          <Flex gap={16} align="center">
            <Button type="primary" onClick={() => navigate(PAGE.gpuGeneric)}>
              控制台
            </Button>
            <Suspense fallback={null}>
              <AccountMenu />
            </Suspense>
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
