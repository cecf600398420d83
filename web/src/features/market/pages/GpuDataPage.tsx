import type { ReactNode } from 'react';
import { Alert, Button, Card, Col, Flex, Row, Skeleton, Table, Typography } from 'antd';
import { CloudServerOutlined, DatabaseOutlined, ExpandAltOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { PAGE, type GpuHost } from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { LoadError } from '../../../components/LoadError';
import { formatUnitPrice, Price } from '../../../components/Price';
import { PublicPage } from '../../../components/PublicPage';

/** The size of the sample quote that prices expansion; 100 GB keeps the per-GB price readable. */
const SAMPLE_GB = 100;

interface DiskRow {
  gpuName: string;
  freePerCard: [number, number];
  maxGb: [number, number];
  hosts: number;
}

/** Free and maximum data disk per GPU model, over the hosts on sale (ranges when hosts differ). */
export function diskRows(hosts: GpuHost[]): DiskRow[] {
  const byModel = new Map<string, DiskRow>();
  for (const h of hosts) {
    const row = byModel.get(h.gpuName);
    if (!row) {
      byModel.set(h.gpuName, { gpuName: h.gpuName, freePerCard: [h.dataDiskFreeGb, h.dataDiskFreeGb], maxGb: [h.dataDiskMaxGb, h.dataDiskMaxGb], hosts: 1 });
      continue;
    }
    row.freePerCard = [Math.min(row.freePerCard[0], h.dataDiskFreeGb), Math.max(row.freePerCard[1], h.dataDiskFreeGb)];
    row.maxGb = [Math.min(row.maxGb[0], h.dataDiskMaxGb), Math.max(row.maxGb[1], h.dataDiskMaxGb)];
    row.hosts += 1;
  }
  return [...byModel.values()];
}

const range = ([lo, hi]: [number, number]) => (lo === hi ? `${lo} GB` : `${lo} – ${hi} GB`);

/**
 * The price of extra disk is not a catalogue field: it is what the server adds to a quote for disk
 * beyond the free size. One sample quote (1 card on a host with room, 1 day) answers it with the
 * server's own figure, so the page never states a price of its own.
 */
function useDiskPriceQuote(host: GpuHost | undefined) {
  return useQuery({
    ...catalogueQueries.diskSampleQuote(host, {
      gpuCount: 1,
      cycle: 'Day',
      duration: 1,
      dataDiskGb: host ? Math.min(host.dataDiskMaxGb, host.dataDiskFreeGb + SAMPLE_GB) : 0,
    }),
    enabled: !!host,
    staleTime: 5 * 60_000,
  });
}

/** /gpudata: the data storage product — the data disk that comes with every GPU instance. */
export default function GpuDataPage() {
  const navigate = useNavigate();
  const hosts = useQuery(catalogueQueries.gpuList({ pageSize: 100 }));
  const sampleHost = hosts.data?.items.find((h) => h.gpuFree > 0 && h.dataDiskMaxGb > h.dataDiskFreeGb);
  const diskQuote = useDiskPriceQuote(sampleHost);
  return (
    <PublicPage
      title="数据存储"
      intro="每张 GPU 卡附带免费数据盘，容量不够时可按需扩容。"
      extra={
        <Flex gap={8}>
          <Button type="primary" icon={<DatabaseOutlined />} onClick={() => navigate(PAGE.gpudataDisk)}>
            管理我的数据盘
          </Button>
          <Button onClick={() => navigate(PAGE.cloudGpu)}>去租用 GPU</Button>
        </Flex>
      }
    >
      <Row gutter={[20, 20]}>
        <Col xs={24} md={8}>
          <Feature icon={<CloudServerOutlined />} title="随卡免费">
            租用 GPU 实例即按卡数附带数据盘，用于存放数据集、模型与训练结果，与系统盘分开。
          </Feature>
        </Col>
        <Col xs={24} md={8}>
          <Feature icon={<ExpandAltOutlined />} title="按需扩容">
            下单时即可填写扩容容量，扩容部分随实例的计费方式一起计费。
          </Feature>
        </Col>
        <Col xs={24} md={8}>
          <Card style={{ height: '100%' }}>
            <Typography.Title level={5} style={{ marginTop: 0 }}>
              扩容价格
            </Typography.Title>
            <DiskPrice quote={diskQuote} loading={hosts.isPending} />
          </Card>
        </Col>
      </Row>
      <Card title="各型号数据盘容量" className="catalogue-section" styles={{ body: { padding: 0 } }}>
        {hosts.isError ? (
          <LoadError error={hosts.error} onRetry={() => void hosts.refetch()} />
        ) : (
          <Table<DiskRow>
            rowKey="gpuName"
            loading={hosts.isPending}
            dataSource={hosts.data ? diskRows(hosts.data.items) : []}
            pagination={false}
            locale={{ emptyText: '暂无在售主机' }}
            columns={[
              { title: 'GPU 型号', dataIndex: 'gpuName' },
              { title: '免费数据盘（每卡）', key: 'free', render: (_, r) => range(r.freePerCard) },
              { title: '最大可扩容至', key: 'max', render: (_, r) => range(r.maxGb) },
              { title: '在售主机', dataIndex: 'hosts', render: (n: number) => `${n} 台` },
            ]}
          />
        )}
      </Card>
    </PublicPage>
  );
}

function Feature({ icon, title, children }: { icon: ReactNode; title: string; children: ReactNode }) {
  return (
    <Card style={{ height: '100%' }}>
      <Typography.Title level={5} style={{ marginTop: 0 }}>
        <span className="feature-icon">{icon}</span>
        {title}
      </Typography.Title>
      <Typography.Text type="secondary">{children}</Typography.Text>
    </Card>
  );
}

function DiskPrice({ quote, loading }: { quote: ReturnType<typeof useDiskPriceQuote>; loading: boolean }) {
  if (loading || (quote.isPending && quote.fetchStatus !== 'idle')) return <Skeleton active paragraph={{ rows: 1 }} />;
  if (quote.isError)
    return (
      <Alert
        type="warning"
        showIcon
        title="暂时无法获取扩容价格"
        action={
          <Button size="small" onClick={() => void quote.refetch()}>
            重试
          </Button>
        }
      />
    );
  const line = quote.data?.lines.find((l) => l.kind === 'dataDisk');
  if (!line) return <Typography.Text type="secondary">扩容价格以下单页的实时报价为准</Typography.Text>;
  return (
    <>
      <Price units={String(BigInt(line.unitPrice) * BigInt(SAMPLE_GB))} per={`${SAMPLE_GB} GB·天`} size="lg" />
      <Typography.Paragraph type="secondary" style={{ margin: '8px 0 0', fontSize: 12 }}>
        即 ¥{formatUnitPrice(line.unitPrice)}/GB·天。超出免费容量的部分按实际容量与时长计费，以下单页的实时报价为准。
      </Typography.Paragraph>
    </>
  );
}
