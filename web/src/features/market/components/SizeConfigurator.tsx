import { Alert, Form, Skeleton, Typography } from 'antd';
import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import {
  BillingCycleUnit,
  InstanceCategory,
  MAX_DATA_DISK_GB,
  MAX_INSTANCE_COUNT,
  type Region,
  type Size,
  type SizeCategory,
  type SizesPage,
} from '@console/contract';
import { catalogueQueries } from '../api/catalogue';
import { ChoiceCards, type Choice } from '../../../components/ChoiceCards';
import { LoadError } from '../../../components/LoadError';
import { Price } from '../../../components/Price';
import { UnitNumberInput } from '../../../components/UnitNumberInput';
import { useSession } from '../../../session/useSession';
import { defaultImage, imageLabel, ImageSelect } from './ImageSelect';
import { OrderTermsFields, payableOf, PurchaseLayout, termsSummary, type DiskField } from './PurchaseFields';
import { sizeQuoteRequest, takesApplication, type PurchaseConfig, type PurchaseUpdate } from '../utils/purchaseQuery';
import { ApplicationChoice } from './ApplicationChoice';
import { UserImageChoice, useUserImage, userImageLabel } from './UserImageChoice';
import type { SummaryItem } from './QuotePanel';
import { useQuote } from '../hooks/useQuote';
import { HostNote } from './HostNote';

type Change = (change: Partial<PurchaseConfig>) => void;

/** Applications are few; one page of them is the catalogue the configurator looks an id up in. */
const ALL_APPS = { pageSize: 100 };

/** The size side of the purchase page: CPU instances, cloud desktops, e-commerce machines, cloud games. */
export function SizeConfigurator({ config, onChange }: { config: PurchaseConfig; onChange: PurchaseUpdate }) {
  const category = config.category as SizeCategory;
  const regions = useQuery(catalogueQueries.regions(category));
  const recommend = useQuery({
    ...catalogueQueries.regionRecommend({ category, sizeId: config.sizeId }),
    enabled: !config.regionId,
  });
  if (regions.isError) return <LoadError error={regions.error} onRetry={() => void regions.refetch()} />;
  if (regions.isPending || (!config.regionId && recommend.isPending)) return <Skeleton active paragraph={{ rows: 10 }} />;
  const regionId = pickId(regions.data, config.regionId) ?? pickId(regions.data, recommend.data?.regionId) ?? regions.data[0]?.id;
  const region = regions.data.find((r) => r.id === regionId);
  if (!region) return <Alert type="info" showIcon title={`暂无可售的${InstanceCategory.label(category)}地区`} description="请稍后再来看看，或联系客服。" />;
  return <SizeForm config={{ ...config, regionId }} category={category} regions={regions.data} region={region} onChange={onChange} />;
}

function pickId<T extends { id: string }>(list: T[] | undefined, wanted: string | undefined): string | undefined {
  return wanted && list?.some((x) => x.id === wanted) ? wanted : undefined;
}

function SizeForm({
  config: asked,
  category,
  regions,
  region,
  onChange,
}: {
  config: PurchaseConfig;
  category: SizeCategory;
  regions: Region[];
  region: Region;
  onChange: PurchaseUpdate;
}) {
  const { loggedIn } = useSession();
  const sizes = useQuery(catalogueQueries.sizes({ category, regionId: region.id, cycle: asked.cycle, pageSize: 100 }));
  // An application (on a CPU size) brings its own image: no image to choose.
  const withApp = !!asked.applicationId && takesApplication(category);
  const images = useQuery({ ...catalogueQueries.images(category), enabled: !withApp });
  const apps = useQuery({ ...catalogueQueries.applications(ALL_APPS), enabled: withApp });
  const app = withApp ? apps.data?.items.find((a) => a.id === asked.applicationId) : undefined;
  const sizeId = pickId(sizes.data?.items, asked.sizeId) ?? sizes.data?.items.find((s) => !s.unavailable)?.id ?? asked.sizeId;
  const imageId = withApp ? undefined : (pickId(images.data, asked.imageId) ?? (images.data ? defaultImage(images.data)?.id : asked.imageId));
  const config: PurchaseConfig = { ...asked, sizeId, imageId };
  const size = sizes.data?.items.find((s) => s.id === sizeId);

  // Ask once the size and image defaults have resolved, so the first quote is for what is on screen.
  const ready = !sizes.isPending && (withApp || !!asked.userImageId || !images.isPending) && sizeQuoteRequest(config) !== null;
  const { query: quote, settling } = useQuote({ kind: 'size', request: ready ? sizeQuoteRequest(config) : null }, loggedIn);
  const image = images.data?.find((i) => i.id === imageId);
  const saved = useUserImage(withApp ? undefined : config.userImageId);
  const software = app ? app.name : saved.data ? userImageLabel(saved.data) : image && imageLabel(image);
  const summary = sizeSummary(config, region, size, software, withApp);
  const set: Change = (change) => onChange(config, change);

  return (
    <PurchaseLayout config={config} regions={regions} summary={summary} quote={quote} ready={ready} settling={settling} onChange={set}>
      <HostNote />
      <Form.Item label="规格">
        <SizeChoices query={sizes} value={sizeId} cycle={config.cycle} onChange={(id) => set({ sizeId: id })} />
      </Form.Item>
      <Form.Item label={withApp ? '镜像应用' : '镜像'}>
        {withApp ? (
          <ApplicationChoice
            app={app}
            query={apps}
            category={category}
            onChangeApp={() => set({ applicationId: undefined })}
            onCategory={(next) => set({ category: next })}
          />
        ) : asked.userImageId ? (
          <UserImageChoice id={asked.userImageId} onClear={() => set({ userImageId: undefined })} />
        ) : (
          <ImageSelect query={images} value={imageId} empty="暂无可用镜像" onChange={(id) => set({ imageId: id })} />
        )}
      </Form.Item>
      <Form.Item label="购买数量" extra={`一次最多购买 ${MAX_INSTANCE_COUNT} 台`}>
        <UnitNumberInput label="购买数量" unit="台" min={1} max={MAX_INSTANCE_COUNT} value={config.count} onChange={(count) => set({ count })} />
      </Form.Item>
      <OrderTermsFields config={config} onChange={set} disk={sizeDisk(size)} voucherCategory={withApp ? 'App' : category} payable={payableOf(quote.data)} />
    </PurchaseLayout>
  );
}

/** Sizes come with a system disk only: any data disk is extra and charged by size. */
function sizeDisk(size: Size | undefined): DiskField {
  return {
    maxGb: MAX_DATA_DISK_GB,
    placeholder: '不需要可留空',
    help: `${size ? `系统盘 ${size.systemDiskGb} GB 已含在规格中；` : ''}数据盘按容量计费`,
  };
}

export function sizeSpecs(s: Size): string {
  return [`${s.cpu} 核`, `${s.memoryGb} GB 内存`, s.gpuName, `系统盘 ${s.systemDiskGb} GB`, `${s.bandwidthMbps} Mbps`].filter(Boolean).join(' · ');
}

function SizeChoices({
  query,
  value,
  cycle,
  onChange,
}: {
  query: UseQueryResult<SizesPage>;
  value: string | undefined;
  cycle: PurchaseConfig['cycle'];
  onChange: (id: string) => void;
}) {
  if (query.isError) return <LoadError error={query.error} onRetry={() => void query.refetch()} />;
  if (query.isPending) return <Skeleton active paragraph={{ rows: 2 }} />;
  if (query.data.items.length === 0) return <Typography.Text type="secondary">该地区暂无可售规格，换个地区试试</Typography.Text>;
  const choices = query.data.items.map((s): Choice => ({
    value: s.id,
    label: s.name,
    title: s.name,
    disabled: !!s.unavailable,
    disabledReason: s.unavailable,
    body: (
      <>
        <div>{sizeSpecs(s)}</div>
        <Price units={s.price.price} per={`台·${BillingCycleUnit[cycle]}`} size="sm" />
      </>
    ),
  }));
  return <ChoiceCards label="规格" value={value} choices={choices} onChange={onChange} />;
}

function sizeSummary(config: PurchaseConfig, region: Region, size: Size | undefined, software: string | undefined, withApp: boolean): SummaryItem[] {
  return [
    { label: '产品', value: withApp ? InstanceCategory.label('App') : InstanceCategory.label(config.category as SizeCategory) },
    { label: '地区', value: region.name },
    { label: '规格', value: size ? `${size.name} × ${config.count} 台` : '—' },
    { label: withApp ? '应用' : '镜像', value: software ?? '—' },
    ...termsSummary(config),
  ];
}
