import { Button, Flex, Layout } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { Outlet, useNavigate } from 'react-router';
import { PAGE } from '@console/contract';
import { AccountMenu } from './AccountMenu';
import { Logo } from './Logo';

/** Full-width tools (workflow, remote desktop, finance): a slim bar and the whole page for the tool. */
export default function ToolLayout() {
  const navigate = useNavigate();
  return (
    <Layout style={{ minHeight: '100vh' }}>
      <Layout.Header className="app-header">
        <Flex align="center" gap={16}>
          <Logo />
          <Button type="text" icon={<ArrowLeftOutlined />} onClick={() => navigate(PAGE.gpuGeneric)}>
            返回控制台
          </Button>
        </Flex>
        <AccountMenu />
      </Layout.Header>
      <Layout.Content className="app-content">
        <Outlet />
      </Layout.Content>
    </Layout>
  );
}
