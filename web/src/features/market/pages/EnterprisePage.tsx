import { Button, Card, Col, Empty, Flex, Row, Skeleton, Statistic, Tag, Typography } from 'antd';
import { ApartmentOutlined, AuditOutlined, CustomerServiceOutlined, WalletOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { PAGE, type GpuType, type Region } from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { CERT_PAGE } from '../../../api/client';
import { CustomerServiceButton } from '../../../components/CustomerService';
import { LoadError } from '../../../components/LoadError';
import { GpuTypeTable } from '../components/GpuTypeTable';
import { PublicPage } from '../../../components/PublicPage';

/** What an enterprise account gets that the console really has (spec §1, §3, §6). */
const SERVICES = [
  { icon: <AuditOutlined />, title: '企业实名认证', text: '以企业主体完成认证，订单与账单归属企业账号。' },
  { icon: <ApartmentOutlined />, title: '子账号与权限', text: '为成员开设子账号，按需授予创建实例、镜像应用、数据与大模型等权限。' },
  { icon: <WalletOutlined />, title: '统一余额与账单', text: '团队共用预付余额，按实例查看费用明细与账单。' },
  { icon: <CustomerServiceOutlined />, title: '专属客服', text: '通过企业微信联系客服，沟通批量采购与长期租用方案。' },
];

/** /enterprise: the enterprise offering, built from the live catalogue. */
export default function EnterprisePage() {
  const navigate = useNavigate();
  const types = useQuery(catalogueQueries.gpuTypes());
  const regions = useQuery(catalogueQueries.regions('Gpu'));
  return (
    <PublicPage title="企业服务" intro="面向团队与企业的 GPU 算力：多地区机房、统一结算、子账号协作。">
      <section className="hero-panel" aria-label="平台算力概况">
        <Row gutter={[32, 24]} align="middle">
          <Col xs={24} lg={10}>
            <Typography.Title level={2} style={{ marginTop: 0 }}>
              为团队准备的 GPU 算力
            </Typography.Title>
            <Typography.Paragraph style={{ fontSize: 15, opacity: 0.9 }}>从单卡实验到多卡训练，按时、按日、按周、按月灵活计费，随用随开。</Typography.Paragraph>
            <Flex gap={12} wrap>
              <CustomerServiceButton size="large">咨询企业方案</CustomerServiceButton>
              <Button size="large" ghost onClick={() => navigate(CERT_PAGE)}>
                企业认证
              </Button>
            </Flex>
          </Col>
          <Col xs={24} lg={14}>
            <CatalogueFigures types={types.data} regions={regions.data} loading={types.isPending || regions.isPending} />
          </Col>
        </Row>
      </section>

      <Row gutter={[20, 20]}>
        {SERVICES.map((s) => (
          <Col key={s.title} xs={24} sm={12} xl={6}>
            <Card style={{ height: '100%' }}>
              <Typography.Title level={5} style={{ marginTop: 0 }}>
                <span className="feature-icon">{s.icon}</span>
                {s.title}
              </Typography.Title>
              <Typography.Text type="secondary">{s.text}</Typography.Text>
            </Card>
          </Col>
        ))}
      </Row>

      <Card
        title="GPU 型号与价格"
        className="catalogue-section"
        styles={{ body: { padding: 0 } }}
        extra={<Typography.Text type="secondary">单价为每卡价格</Typography.Text>}
      >
        <GpuTypeTable query={types} mode="prices" />
      </Card>

      <Card title="地区与机房" className="catalogue-section">
        {regions.isError ? (
          <LoadError error={regions.error} onRetry={() => void regions.refetch()} />
        ) : (
          <RegionGrid regions={regions.data} loading={regions.isPending} onOpen={(r) => navigate(`${PAGE.cloudGpu}?regionId=${encodeURIComponent(r.id)}`)} />
        )}
      </Card>
    </PublicPage>
  );
}

function CatalogueFigures({ types, regions, loading }: { types?: GpuType[]; regions?: Region[]; loading: boolean }) {
  const figures = [
    { title: 'GPU 型号', value: types?.length, suffix: '种' },
    { title: '开放地区', value: regions?.length, suffix: '个' },
    { title: '机房', value: regions?.reduce((n, r) => n + r.rooms.length, 0), suffix: '个' },
    { title: 'GPU 总卡数', value: types?.reduce((n, t) => n + t.gpuTotal, 0), suffix: '卡' },
  ];
  return (
    <Row gutter={[24, 24]}>
      {figures.map((f) => (
        <Col key={f.title} xs={12} md={6}>
          <Statistic
            title={f.title}
            value={f.value ?? '--'}
            suffix={f.value !== undefined ? f.suffix : undefined}
            loading={loading}
            styles={{ title: { color: 'rgba(255, 255, 255, 0.8)' }, content: { color: '#fff' } }}
          />
        </Col>
      ))}
    </Row>
  );
}

function RegionGrid({ regions, loading, onOpen }: { regions?: Region[]; loading: boolean; onOpen: (r: Region) => void }) {
  if (loading) return <Skeleton active paragraph={{ rows: 2 }} />;
  if (!regions?.length) return <Empty description="暂无开放的地区" />;
  return (
    <Row gutter={[20, 20]}>
      {regions.map((r) => (
        <Col key={r.id} xs={24} sm={12} lg={6}>
          <RegionItem region={r} onOpen={() => onOpen(r)} />
        </Col>
      ))}
    </Row>
  );
}

function RegionItem({ region, onOpen }: { region: Region; onOpen: () => void }) {
  return (
    <Card size="small" hoverable onClick={onOpen} title={region.name} extra={<Tag color="purple">{region.area}</Tag>}>
      <Typography.Paragraph style={{ marginBottom: 4 }}>
        空闲{' '}
        <Typography.Text strong className="text-primary">
          {region.gpuFree}
        </Typography.Text>{' '}
        卡
      </Typography.Paragraph>
      <Typography.Text type="secondary">{region.rooms.map((r) => r.name).join('、') || '暂无机房'}</Typography.Text>
    </Card>
  );
}
