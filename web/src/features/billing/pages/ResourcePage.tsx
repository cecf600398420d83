import { useState } from 'react';
import { Card, Empty, Flex, Progress, Skeleton, Table, Tag, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import dayjs from 'dayjs';
import type { Order, ResourcePackage } from '@console/contract';
import { orderQueries } from '../../../api/orders';
import { LoadError } from '../../../components/LoadError';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { formatTime, orderDetailPath } from '../../../components/orderViews';
import { catalogueQueries } from '../../market';
import { PageFrame } from '../../../components/PageFrame';
import { packageQuantity, remainPercent, ResourceProductCard } from '../../../components/resourceViews';
import { UnpaidOrderBanner } from '../../../components/UnpaidOrderBanner';

/** /console/cost/resource: buy resource packages (as model orders) and watch what is left of them. */
export default function ResourcePage() {
  const [paying, setPaying] = useState<Order | null>(null);
  return (
    <PageFrame>
      <Flex vertical gap={16}>
        <UnpaidOrderBanner />
        <Products onOrdered={setPaying} />
        <Packages />
      </Flex>
      {paying && <OrderPayModal order={paying} onClose={() => setPaying(null)} />}
    </PageFrame>
  );
}

function Products({ onOrdered }: { onOrdered: (o: Order) => void }) {
  const products = useQuery({ ...orderQueries.products(), staleTime: 60_000 });
  return (
    <Card title="购买资源包" extra={<Typography.Text type="secondary">资源包在有效期内优先于余额抵扣，支付后立即生效</Typography.Text>}>
      {products.isPending ? (
        <Skeleton active paragraph={{ rows: 4 }} />
      ) : products.isError ? (
        <LoadError error={products.error} onRetry={() => void products.refetch()} />
      ) : products.data.items.length === 0 ? (
        <Empty description="暂无可购买的资源包" />
      ) : (
        <div className="resource-grid">
          {products.data.items.map((p) => (
            <ResourceProductCard key={p.id} product={p} onOrdered={onOrdered} />
          ))}
        </div>
      )}
    </Card>
  );
}

function Packages() {
  const packages = useQuery(orderQueries.packages());
  const gpuTypes = useQuery(catalogueQueries.gpuTypes());
  const gpuName = (id: string) => gpuTypes.data?.find((g) => g.id === id)?.name ?? id;
  return (
    <Card
      title="我的资源包"
      extra={<Typography.Text type="secondary">卡时包：同型号按量 GPU 实例开机后按毫秒抵扣，先到期的先用，用完再扣余额</Typography.Text>}
    >
      {packages.isError ? (
        <LoadError error={packages.error} onRetry={() => void packages.refetch()} />
      ) : (
        <Table<ResourcePackage>
          rowKey="id"
          loading={packages.isPending}
          dataSource={packages.data?.items}
          pagination={(packages.data?.items.length ?? 0) > 10 ? { pageSize: 10, showTotal: (t) => `共 ${t} 个` } : false}
          scroll={{ x: 1100 }}
          locale={{ emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有资源包，购买后可在这里查看余量与有效期" /> }}
          columns={[
            {
              title: '名称',
              dataIndex: 'name',
              render: (n: string, r) => (
                <Flex vertical gap={2} align="start">
                  <Typography.Text strong>{n}</Typography.Text>
                  {r.gpuTypeId ? (
                    <Tag color="purple" style={{ marginInlineEnd: 0 }}>
                      抵扣 {gpuName(r.gpuTypeId)} 按量实例
                    </Tag>
                  ) : (
                    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                      模型服务按 Token 抵扣（即将开放）
                    </Typography.Text>
                  )}
                </Flex>
              ),
            },
            { title: '总量', dataIndex: 'total', width: 140, render: (v: string, r) => packageQuantity(v, r) },
            {
              title: '剩余',
              dataIndex: 'remain',
              width: 240,
              render: (v: string, r) => {
                const percent = remainPercent(v, r.total);
                return (
                  <Flex vertical gap={0}>
                    <span title={r.gpuTypeId ? `剩余 ${v} 小时` : undefined}>{packageQuantity(v, r)}</span>
                    <Progress percent={percent} size="small" status="normal" format={(p) => `${p}%`} aria-label={`剩余 ${percent}%`} />
                  </Flex>
                );
              },
            },
            {
              title: '到期时间',
              dataIndex: 'expiresAt',
              width: 200,
              render: (v: string, r) => (
                <Flex gap={6} align="center">
                  {formatTime(v)}
                  {(r.expired || dayjs(v).isBefore(dayjs())) && <Tag style={{ marginInlineEnd: 0 }}>已过期</Tag>}
                </Flex>
              ),
            },
            { title: '购买时间', dataIndex: 'createdAt', width: 170, render: (v: string) => formatTime(v) },
            {
              title: '订单',
              dataIndex: 'orderUid',
              width: 220,
              render: (uid: string) => (
                <Link to={orderDetailPath({ kind: 'Ai', orderUid: uid })} className="mono">
                  {uid}
                </Link>
              ),
            },
          ]}
        />
      )}
    </Card>
  );
}
