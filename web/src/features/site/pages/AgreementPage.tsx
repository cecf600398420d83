import { Card, Flex, Skeleton, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link, useLocation } from 'react-router';
import { AgreementTitle, PAGE, type AgreementKind } from '@console/contract';
import { siteQueries } from '../../../api/site';
import { LoadError } from '../../../components/LoadError';
import { PublicPage } from '../../../components/PublicPage';
import { SiteDocument } from '../components/SiteDocument';

const PATHS: Record<AgreementKind, string> = { user: PAGE.agreementUser, privacy: PAGE.agreementPrivacy };

/** /agreement/user and /agreement/privacy: the operator's 用户协议 and 隐私政策, open to everyone (linked from registration). */
export default function AgreementPage() {
  const { pathname } = useLocation();
  const kind: AgreementKind = pathname === PAGE.agreementPrivacy ? 'privacy' : 'user';
  const other: AgreementKind = kind === 'user' ? 'privacy' : 'user';
  const doc = useQuery(siteQueries.agreement(kind));
  return (
    <PublicPage
      title={AgreementTitle[kind]}
      extra={
        <Link to={PATHS[other]} replace>
          查看《{AgreementTitle[other]}》
        </Link>
      }
    >
      <Card>
        {doc.isError ? (
          <LoadError error={doc.error} onRetry={() => void doc.refetch()} />
        ) : doc.data ? (
          <SiteDocument text={doc.data.content} />
        ) : (
          <Flex vertical gap={16} aria-busy>
            <Skeleton active paragraph={{ rows: 8 }} />
          </Flex>
        )}
        <Typography.Paragraph type="secondary" style={{ marginTop: 24, marginBottom: 0 }}>
          本文由平台运营方提供。
        </Typography.Paragraph>
      </Card>
    </PublicPage>
  );
}
