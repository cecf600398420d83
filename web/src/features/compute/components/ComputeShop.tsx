/** 算力商城: GPU 时长包 by card type (bought through the resource package order flow), and the two ways to run SD WebUI / ComfyUI. */
import { useState, type ReactNode } from 'react';
import { Button, Card, Col, Empty, Flex, Row, Skeleton, Tag, Typography } from 'antd';
import { AppstoreOutlined, ThunderboltOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { DIFFUSION_GPU, PAGE, type Order, type ResourceProduct } from '@console/contract';
import { orderQueries } from '../../../api/orders';
import { LoadError } from '../../../components/LoadError';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { ResourceProductCard } from '../../../components/resourceViews';
import { UnpaidOrderBanner } from '../../../components/UnpaidOrderBanner';
import { useGpuNames } from './computeViews';

/** The applications of 独占模式 as the catalogue names them, bought on the purchase page (an RTX 4090 to start with). */
const EXCLUSIVE_APPS = [
  { id: 'sd-webui', name: 'SD WebUI' },
  { id: 'comfyui', name: 'ComfyUI' },
] as const;
const appPurchasePath = (applicationId: string) => `${PAGE.purchase}?${new URLSearchParams({ applicationId, gpuTypeId: DIFFUSION_GPU })}`;

export function ComputeShop() {
  const [paying, setPaying] = useState<Order | null>(null);
  return (
    <Flex vertical gap={16}>
      <UnpaidOrderBanner />
      <GpuPackages onOrdered={setPaying} />
      <SdModes />
      {paying && <OrderPayModal order={paying} onClose={() => setPaying(null)} />}
    </Flex>
  );
}

/** The GPU-hour products by card type, in the catalogue's order. */
function byGpuType(products: readonly ResourceProduct[]): [string, ResourceProduct[]][] {
  const groups = new Map<string, ResourceProduct[]>();
  for (const p of products) {
    if (!p.gpuTypeId) continue;
    groups.set(p.gpuTypeId, [...(groups.get(p.gpuTypeId) ?? []), p]);
  }
  return [...groups];
}

function GpuPackages({ onOrdered }: { onOrdered: (o: Order) => void }) {
  const products = useQuery({ ...orderQueries.products(), staleTime: 60_000 });
  const gpu = useGpuNames();
  const groups = products.data ? byGpuType(products.data.items) : [];
  return (
    <Card title="GPU 时长包" extra={<Typography.Text type="secondary">有效期内先于余额抵扣同型号 GPU 的用时，支付后立即生效</Typography.Text>}>
      {products.isPending ? (
        <Skeleton active paragraph={{ rows: 4 }} />
      ) : products.isError ? (
        <LoadError error={products.error} onRetry={() => void products.refetch()} />
      ) : groups.length === 0 ? (
        <Empty description="暂无可购买的时长包" />
      ) : (
        <Flex vertical gap={24}>
          {groups.map(([gpuTypeId, items]) => {
            const memory = gpu.memoryGb(gpuTypeId);
            return (
              <section key={gpuTypeId} aria-label={`${gpu.name(gpuTypeId)} 时长包`}>
                <Flex align="center" gap={8} wrap style={{ marginBottom: 12 }}>
                  <Typography.Title level={5} style={{ margin: 0 }}>
                    {gpu.name(gpuTypeId)}
                  </Typography.Title>
                  {memory !== undefined && <Tag style={{ marginInlineEnd: 0 }}>{memory} GB 显存</Tag>}
                  <Typography.Text type="secondary">
                    {gpuTypeId === DIFFUSION_GPU
                      ? 'LoRA 训练、AI 绘图和按量计费的 RTX 4090 实例先用 RTX 4090 时长包，用完再扣余额'
                      : `按量计费的 ${gpu.name(gpuTypeId)} 实例先用时长包，用完再扣余额`}
                  </Typography.Text>
                </Flex>
                <div className="resource-grid">
                  {items.map((p) => (
                    <ResourceProductCard key={p.id} product={p} onOrdered={onOrdered} confirm />
                  ))}
                </div>
              </section>
            );
          })}
        </Flex>
      )}
    </Card>
  );
}

/** SD WebUI / ComfyUI: generate on the shared GPUs (paid per GPU second), or on a machine of one's own. */
function SdModes() {
  return (
    <Card title="SD WebUI / ComfyUI">
      <Row gutter={[16, 16]}>
        <Col xs={24} lg={12}>
          <ModeCard
            icon={<ThunderboltOutlined />}
            title="共享模式"
            price="按生成时的 GPU 秒计费"
            description="无需开机和部署，在线填写提示词、选择 LoRA 即可出图，排队由平台调度，不生成不花钱。"
            note="RTX 4090 时长包先抵扣 AI 绘图的 GPU 用时，LoRA 训练同样先用时长包。"
          >
            <Link to={PAGE.sdDiffusion}>
              <Button type="primary">立即生图</Button>
            </Link>
          </ModeCard>
        </Col>
        <Col xs={24} lg={12}>
          <ModeCard
            icon={<AppstoreOutlined />}
            title="独占模式"
            price="按小时，或包日 / 周 / 月"
            description="独享整张 GPU 的 SD WebUI 或 ComfyUI 实例，自由安装插件、模型与工作流，适合长时间批量出图。"
            note="按量计费（按小时）的 RTX 4090 实例先用 RTX 4090 时长包，包日 / 周 / 月不使用时长包。"
          >
            <Flex gap={8} wrap>
              {EXCLUSIVE_APPS.map((app) => (
                <Link key={app.id} to={appPurchasePath(app.id)}>
                  <Button>部署 {app.name}</Button>
                </Link>
              ))}
            </Flex>
          </ModeCard>
        </Col>
      </Row>
    </Card>
  );
}

function ModeCard({
  icon,
  title,
  price,
  description,
  note,
  children,
}: {
  icon: ReactNode;
  title: string;
  price: string;
  description: string;
  note: string;
  children: ReactNode;
}) {
  return (
    <section className="resource-card" aria-label={title} style={{ height: '100%' }}>
      <Flex align="center" gap={8}>
        <Typography.Text strong className="resource-card-name">
          {icon} {title}
        </Typography.Text>
        <Tag color="processing" style={{ marginInlineEnd: 0 }}>
          {price}
        </Tag>
      </Flex>
      <Typography.Paragraph type="secondary" style={{ margin: 0 }}>
        {description}
      </Typography.Paragraph>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {note}
      </Typography.Text>
      <div style={{ marginTop: 'auto' }}>{children}</div>
    </section>
  );
}
