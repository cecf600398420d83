import { Alert, Button, Card, Descriptions, Result, Space, Spin } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { CertStatus, PAGE } from '@console/contract';
import { accountQueries } from '../api/account';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';

/** 企业中心: the enterprise certification and the team (child accounts). */
export default function EnterprisePage() {
  const cert = useQuery(accountQueries.certify());
  const children = useQuery(accountQueries.children(1, 10));
  if (cert.isPending) return <Spin style={{ display: 'block', margin: 48 }} />;
  if (cert.isError) return <LoadError error={cert.error} onRetry={() => cert.refetch()} />;
  const e = cert.data.enterprise;
  const certLink = `${PAGE.account}?tab=checkInfo`;
  return (
    <PageFrame>
      <Space direction="vertical" size={16} style={{ width: '100%' }}>
        <Card title="企业认证">
          {e?.status === 'Succeed' ? (
            <Descriptions column={1} size="small">
              <Descriptions.Item label="企业名称">{e.companyName}</Descriptions.Item>
              <Descriptions.Item label="统一社会信用代码">{e.creditCode}</Descriptions.Item>
              <Descriptions.Item label="法定代表人">{e.legalPerson}</Descriptions.Item>
              <Descriptions.Item label="联系人">{`${e.contactName}（${e.contactMobile}）`}</Descriptions.Item>
            </Descriptions>
          ) : e && e.status !== 'Init' ? (
            <Alert
              type={e.status === 'Failed' ? 'error' : 'info'}
              showIcon
              message={`${e.companyName}：${CertStatus.label(e.status)}${e.reason ? `（${e.reason}）` : ''}`}
              action={<Link to={certLink}>{e.status === 'Failed' ? '重新提交' : '查看'}</Link>}
            />
          ) : (
            <Result
              status="info"
              title="尚未完成企业认证"
              subTitle="企业认证后账号升级为企业账号，可开具企业发票，团队成员通过子账号协作。"
              extra={
                <Link to={certLink}>
                  <Button type="primary">去认证</Button>
                </Link>
              }
            />
          )}
        </Card>
        <Card title="团队成员（子账号）" extra={<Link to={`${PAGE.account}?tab=children`}>管理子账号</Link>}>
          {children.isPending ? <Spin /> : `共 ${children.data?.total ?? 0} 个子账号，使用主账号余额，按授予的权限使用产品。`}
        </Card>
      </Space>
    </PageFrame>
  );
}
