import { Alert, Button, Form, Radio, Skeleton, Space, Tag, Typography } from 'antd';
import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import {
  BillingCycleUnit,
  formatFilterBy,
  MAX_DATA_DISK_GB,
  MAX_GPU_COUNT,
  type Application,
  type GpuHost,
  type Image,
  type Region,
  type AvailableGpuType,
} from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { ChoiceCards, type Choice } from '../../../components/ChoiceCards';
import { LoadError } from '../../../components/LoadError';
import { Price } from '../../../components/Price';
import { useSession } from '../../../session/useSession';
import { ApplicationChoice } from './ApplicationChoice';
import { defaultImage, imageLabel, ImageSelect } from './ImageSelect';
import { OrderTermsFields, payableOf, PurchaseLayout, termsSummary, type DiskField } from './PurchaseFields';
import { gpuQuoteRequest, type PurchaseConfig, type PurchaseUpdate } from '../utils/purchaseQuery';
import type { SummaryItem } from './QuotePanel';
import { useQuote } from '../hooks/useQuote';
import { UserImageChoice, useUserImage, userImageLabel } from './UserImageChoice';

type Change = (change: Partial<PurchaseConfig>) => void;

/** Applications are few; one page of them is the catalogue the configurator looks an id up in. */
const ALL_APPS = { pageSize: 100 };

/**
 * The GPU side of the purchase page. The URL holds what the buyer asked for; missing or stale
 * choices (no region yet, a GPU model the region lacks) resolve to sensible defaults here, and
 * those resolved values are what the quote, the URL and the login redirect carry.
 */
export function GpuConfigurator({ config, onChange }: { config: PurchaseConfig; onChange: PurchaseUpdate }) {
  const regions = useQuery(catalogueQueries.regions('Gpu'));
  const recommend = useQuery({
    ...catalogueQueries.regionRecommend({ category: 'Gpu', gpuTypeId: config.gpuTypeId }),
    enabled: !config.regionId,
  });
  const regionId = pickRegion(regions.data, config.regionId, recommend.data?.regionId);
  const region = regions.data?.find((r) => r.id === regionId);
  const roomId = region?.rooms.some((r) => r.id === config.roomId) ? config.roomId : undefined;

  if (regions.isError) return <LoadError error={regions.error} onRetry={() => void regions.refetch()} />;
  if (regions.isPending || (!config.regionId && recommend.isPending)) return <Skeleton active paragraph={{ rows: 10 }} />;
  if (!region) return <Alert type="info" showIcon title="暂无可售的 GPU 地区" description="请稍后再来看看，或联系客服。" />;
  return <GpuForm config={{ ...config, regionId, roomId }} regions={regions.data} region={region} onChange={onChange} />;
}

function pickRegion(list: Region[] | undefined, wanted: string | undefined, recommended: string | undefined): string | undefined {
  if (!list?.length) return undefined;
  const has = (id: string | undefined) => id !== undefined && list.some((r) => r.id === id);
  if (has(wanted)) return wanted;
  if (has(recommended)) return recommended;
  return (list.find((r) => r.gpuFree > 0) ?? list[0])!.id;
}

/**
 * What the GPU form shows and asks a price for: the catalogue answers it depends on, and the
 * configuration with the model and image resolved against them.
 */
function useGpuChoices(asked: PurchaseConfig) {
  const available = useQuery(catalogueQueries.availableGpuTypes({ regionId: asked.regionId, roomId: asked.roomId }));
  const apps = useQuery({ ...catalogueQueries.applications(ALL_APPS), enabled: !!asked.applicationId });
  const app = apps.data?.items.find((a) => a.id === asked.applicationId);
  const gpuTypeId = pickGpuType(available.data, asked, app);
  const images = useQuery({ ...catalogueQueries.gpuImages(gpuTypeId), enabled: !!gpuTypeId });
  // An application (or a saved image) brings its own image: the order names one or the other, never both.
  const imageId = asked.applicationId || asked.userImageId ? undefined : pickImage(images.data, asked.imageId);
  const config: PurchaseConfig = { ...asked, gpuTypeId, imageId };
  const hosts = useQuery({
    ...catalogueQueries.gpuList({ filterBy: formatFilterBy({ region: config.regionId, room: config.roomId, gpuType: gpuTypeId }), pageSize: 100 }),
    enabled: !!gpuTypeId,
  });
  // Ask once the defaults have resolved (model for the region, image for the model), not before
  // and again after: the first answer would be for a configuration the buyer never saw.
  const ready = !available.isPending && (!!asked.applicationId || !!asked.userImageId || !images.isPending) && gpuQuoteRequest(config) !== null;
  return { config, ready, available, apps, app, images, hosts };
}

function GpuForm({ config: asked, regions, region, onChange }: { config: PurchaseConfig; regions: Region[]; region: Region; onChange: PurchaseUpdate }) {
  const { loggedIn } = useSession();
  const { config, ready, available, apps, app, images, hosts } = useGpuChoices(asked);
  const { gpuTypeId, imageId } = config;
  const { query: quote, settling } = useQuote({ kind: 'gpu', request: ready ? gpuQuoteRequest(config) : null }, loggedIn);
  // The pinned host, or where the server would place the order.
  const host = hosts.data?.items.find((h) => h.id === (config.hostId ?? quote.data?.placement.hostId));
  const gpuType = available.data?.find((t) => t.id === gpuTypeId);
  const image = images.data?.find((i) => i.id === imageId);
  const saved = useUserImage(config.applicationId ? undefined : config.userImageId);
  const summary = gpuSummary(config, region, gpuType, host, app ? app.name : saved.data ? userImageLabel(saved.data) : image && imageLabel(image));
  const set: Change = (change) => onChange(config, change);

  return (
    <PurchaseLayout config={config} regions={regions} summary={summary} quote={quote} ready={ready} settling={settling} onChange={set}>
      {region.rooms.length > 0 && (
        <Form.Item label="机房">
          <Radio.Group
            aria-label="机房"
            optionType="button"
            value={config.roomId ?? ''}
            onChange={(e) => set({ roomId: e.target.value || undefined })}
            options={[{ value: '', label: '自动分配' }, ...region.rooms.map((r) => ({ value: r.id, label: r.name }))]}
          />
        </Form.Item>
      )}
      <Form.Item label="GPU 型号">
        <GpuTypeChoices available={available} value={gpuTypeId} cycle={config.cycle} app={app} onChange={(id) => set({ gpuTypeId: id })} />
      </Form.Item>
      <Form.Item label="GPU 数量" extra={countHelp(config, host, available.data, gpuTypeId)}>
        <Radio.Group
          aria-label="GPU 数量"
          optionType="button"
          value={config.gpuCount}
          onChange={(e) => set({ gpuCount: e.target.value })}
          options={countOptions(config.hostId ? host?.gpuFree : gpuType?.maxGpuPerHost)}
        />
      </Form.Item>
      {config.hostId && <PinnedHost host={host} loading={hosts.isPending} onUnpin={() => set({ hostId: undefined })} />}
      {host && <HostSpecs host={host} gpuCount={config.gpuCount} />}
      <Form.Item label={app ? '镜像应用' : '镜像'}>
        {asked.applicationId ? (
          <ApplicationChoice
            app={app}
            query={apps}
            category="Gpu"
            onChangeApp={() => set({ applicationId: undefined })}
            onCategory={(category) => set({ category })}
          />
        ) : asked.userImageId ? (
          <UserImageChoice id={asked.userImageId} onClear={() => set({ userImageId: undefined })} />
        ) : (
          <ImageSelect query={images} value={imageId} empty="该型号暂无可用镜像" onChange={(id) => set({ imageId: id })} />
        )}
      </Form.Item>
      <OrderTermsFields
        config={config}
        onChange={set}
        disk={diskField(host, config.gpuCount)}
        voucherCategory={config.applicationId ? 'App' : 'Gpu'}
        payable={payableOf(quote.data)}
      />
    </PurchaseLayout>
  );
}

/**
 * The asked model if the region (or room) offers it, even when it is full (the quote then says so);
 * otherwise the first that can take the asked card count and the application's memory need.
 */
function pickGpuType(available: AvailableGpuType[] | undefined, asked: PurchaseConfig, app: Application | undefined): string | undefined {
  if (!available) return asked.gpuTypeId; // still loading: keep what was asked
  if (available.some((t) => t.id === asked.gpuTypeId)) return asked.gpuTypeId;
  const fitsApp = (t: AvailableGpuType) => !app || t.memoryGb >= app.minGpuMemoryGb;
  const pick =
    available.find((t) => fitsApp(t) && t.maxGpuPerHost >= asked.gpuCount) ?? available.find((t) => fitsApp(t) && t.maxGpuPerHost > 0) ?? available[0];
  return pick?.id;
}

function pickImage(images: Image[] | undefined, wanted: string | undefined): string | undefined {
  if (!images) return wanted;
  return images.some((i) => i.id === wanted) ? wanted : defaultImage(images)?.id;
}

function countOptions(max: number | undefined) {
  return Array.from({ length: MAX_GPU_COUNT }, (_, i) => i + 1).map((n) => ({
    value: n,
    label: `${n}`,
    // Unknown capacity (still loading) disables nothing; the quote has the last word anyway.
    disabled: max !== undefined && n > max,
  }));
}

function countHelp(config: PurchaseConfig, host: GpuHost | undefined, available: AvailableGpuType[] | undefined, gpuTypeId: string | undefined) {
  if (config.hostId && host) return `该主机当前空闲 ${host.gpuFree} 卡`;
  const max = available?.find((t) => t.id === gpuTypeId)?.maxGpuPerHost;
  return max !== undefined ? `单台主机当前最多可租 ${max} 卡` : undefined;
}

/** A GPU instance gets dataDiskFreeGb per card for free; dataDiskGb is the total it asks for. */
function diskField(host: GpuHost | undefined, gpuCount: number): DiskField {
  if (!host) return { maxGb: MAX_DATA_DISK_GB, placeholder: '使用免费容量', help: '每卡附带免费数据盘，容量以分配到的主机为准；超出免费容量的部分按容量计费' };
  const free = host.dataDiskFreeGb * gpuCount;
  return {
    maxGb: Math.min(MAX_DATA_DISK_GB, host.dataDiskMaxGb),
    placeholder: `免费 ${free} GB`,
    help: `每卡免费 ${host.dataDiskFreeGb} GB，${gpuCount} 卡共 ${free} GB；填写总容量，超出部分按容量计费，最大 ${host.dataDiskMaxGb} GB`,
  };
}

function gpuSummary(
  config: PurchaseConfig,
  region: Region,
  gpuType: AvailableGpuType | undefined,
  host: GpuHost | undefined,
  software: string | undefined,
): SummaryItem[] {
  const room = region.rooms.find((r) => r.id === config.roomId);
  // Without a chosen room the server places the order: say where, and that it was automatic.
  const place = room ? room.name : host ? `${host.roomName}（自动分配）` : '自动分配';
  return [
    { label: '地区', value: place.startsWith(region.name) ? place : `${region.name} · ${place}` },
    { label: 'GPU', value: gpuType ? `${gpuType.name} × ${config.gpuCount} 卡` : '—' },
    { label: config.applicationId ? '应用' : '镜像', value: software ?? '—' },
    ...termsSummary(config),
  ];
}

function GpuTypeChoices({
  available,
  value,
  cycle,
  app,
  onChange,
}: {
  available: UseQueryResult<AvailableGpuType[]>;
  value: string | undefined;
  cycle: PurchaseConfig['cycle'];
  app: Application | undefined;
  onChange: (id: string) => void;
}) {
  if (available.isError) return <LoadError error={available.error} onRetry={() => void available.refetch()} />;
  if (available.isPending) return <Skeleton active paragraph={{ rows: 2 }} />;
  if (available.data.length === 0) return <Typography.Text type="secondary">该地区暂无可售的 GPU 型号，换个地区试试</Typography.Text>;
  const choices = available.data.map((t): Choice => {
    const price = t.prices.find((p) => p.cycle === cycle);
    const tooSmall = app !== undefined && t.memoryGb < app.minGpuMemoryGb;
    const full = t.maxGpuPerHost <= 0;
    return {
      value: t.id,
      label: t.name,
      title: (
        <Space size={6}>
          {t.name}
          <Tag color="purple" style={{ margin: 0 }}>
            {t.memoryGb} GB
          </Tag>
        </Space>
      ),
      body: (
        <>
          <div>
            空闲 {t.gpuFree} 卡 · {t.architecture}
          </div>
          {price && <Price units={price.price} per={`卡·${BillingCycleUnit[cycle]}`} size="sm" />}
        </>
      ),
      disabled: full || tooSmall,
      disabledReason: tooSmall ? `该应用需显存 ≥ ${app!.minGpuMemoryGb} GB` : full ? '已租满' : undefined,
    };
  });
  return <ChoiceCards label="GPU 型号" value={value} choices={choices} onChange={onChange} />;
}

function PinnedHost({ host, loading, onUnpin }: { host: GpuHost | undefined; loading: boolean; onUnpin: () => void }) {
  const text = host ? `已指定主机 ${host.name}（${host.regionName} · ${host.roomName}）` : loading ? '已指定主机' : '指定的主机已不在该配置中';
  return (
    <Form.Item label=" ">
      <Alert
        type={host || loading ? 'info' : 'warning'}
        showIcon
        title={text}
        action={
          <Button size="small" onClick={onUnpin}>
            改为自动分配
          </Button>
        }
      />
    </Form.Item>
  );
}

function HostSpecs({ host, gpuCount }: { host: GpuHost; gpuCount: number }) {
  return (
    <Form.Item label="实例配置">
      <Typography.Text>
        CPU {host.cpuPerGpu * gpuCount} 核 · 内存 {host.memoryGbPerGpu * gpuCount} GB · 系统盘 {host.systemDiskGb} GB · 最高 CUDA {host.maxCuda}
      </Typography.Text>
      <br />
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {host.cpuModel}，按所租卡数分配 CPU 与内存
      </Typography.Text>
    </Form.Item>
  );
}
