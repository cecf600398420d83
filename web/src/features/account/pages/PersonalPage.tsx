import { Avatar, Button, Card, Col, Row, Space, Statistic, Tag, Typography } from 'antd';
import { UserOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { AccountType, PAGE } from '@console/contract';
import { accountQueries } from '../api/account';
import { displayName } from '../../../layouts/AccountMenu';
import { useSession } from '../../../session/useSession';
import { CertTag } from '../components/CertTag';

/** 个人中心: who I am, what is verified, where to manage it. */
export default function PersonalPage() {
  const { user } = useSession();
  const student = useQuery(accountQueries.student());
  const children = useQuery(accountQueries.children(1, 10));
  if (!user) return null;
  const tab = (t: string) => `${PAGE.account}?tab=${t}`;
  return (
    <div style={{ padding: 24 }}>
      <Card>
        <Space size={16} align="center">
          <Avatar size={64} src={user.logo || undefined} icon={<UserOutlined />} />
          <Space direction="vertical" size={4}>
            <Typography.Title level={4} style={{ margin: 0 }}>
              {user.name || displayName(user)}
            </Typography.Title>
            <Space>
              <Tag>{AccountType.label(user.accountType)}</Tag>
              <CertTag type={user.certType} status={user.certStatus} />
              {user.isStudent && <Tag color="purple">学生</Tag>}
            </Space>
          </Space>
        </Space>
      </Card>
      <Row gutter={16} style={{ marginTop: 16 }}>
        <Col xs={24} md={8}>
          <Card title="实名认证" extra={<Link to={tab('checkInfo')}>{user.certified ? '查看' : '去认证'}</Link>}>
            <Typography.Paragraph type="secondary">部分产品（如数据集）需完成实名认证后使用。</Typography.Paragraph>
            <CertTag type={user.certType} status={user.certStatus} />
          </Card>
        </Col>
        <Col xs={24} md={8}>
          <Card title="学生认证" extra={<Link to={tab('student')}>{user.isStudent ? '查看' : '去申请'}</Link>}>
            <Typography.Paragraph type="secondary">在校学生购买 GPU 实例享学生价。</Typography.Paragraph>
            {student.data ? (
              <Tag color={user.isStudent ? 'purple' : 'default'}>{user.isStudent ? '已认证' : student.data.status === 'Pending' ? '审核中' : '未认证'}</Tag>
            ) : null}
          </Card>
        </Col>
        <Col xs={24} md={8}>
          <Card title="子账号" extra={<Link to={tab('children')}>管理</Link>}>
            <Statistic value={children.data?.total ?? 0} suffix="个" loading={children.isPending} />
          </Card>
        </Col>
      </Row>
      <Space style={{ marginTop: 16 }}>
        <Link to={tab('security')}>
          <Button>安全设置（密码、手机号、邮箱）</Button>
        </Link>
      </Space>
    </div>
  );
}
