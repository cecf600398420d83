import { Button, Flex, Layout, Menu } from 'antd';
import { Outlet, useLocation, useNavigate } from 'react-router';
import { PAGE } from '@console/contract';
import { seesFinance } from '../auth/permissions';
import { useSession } from '../session/useSession';
import { AccountMenu } from './AccountMenu';
import { BalanceLink } from './BalanceLink';
import { Logo } from './Logo';
import { NoticeBell } from './NoticeBell';
import { menuItemsFor, openKeyOf, selectedKey } from './consoleMenu';

/** The generic console frame: header with balance, the message bell and account, side menu of the areas. */
export default function ConsoleLayout() {
  const { user } = useSession();
  const { pathname } = useLocation();
  const navigate = useNavigate();
  const selected = selectedKey(pathname);
  return (
    <Layout style={{ minHeight: '100vh' }}>
      <Layout.Header className="app-header app-header-sticky">
        <Logo />
        <Flex gap={24} align="center">
          <BalanceLink />
          {/* A child without 财务 may not recharge: the button would only bounce it off the recharge page. */}
          {seesFinance(user) && (
            <Button type="primary" size="small" onClick={() => navigate(PAGE.recharge)}>
              充值
            </Button>
          )}
          <NoticeBell />
          <AccountMenu />
        </Flex>
      </Layout.Header>
      <Layout>
        <Layout.Sider width={208} theme="light" breakpoint="lg" collapsible className="console-sider">
          <Menu
            mode="inline"
            items={menuItemsFor(user)}
            selectedKeys={selected ? [selected] : []}
            defaultOpenKeys={openKeyOf(selected)}
            onClick={({ key }) => navigate(key)}
            aria-label="控制台导航"
          />
        </Layout.Sider>
        <Layout.Content className="app-content">
          <Outlet />
        </Layout.Content>
      </Layout>
    </Layout>
  );
}
