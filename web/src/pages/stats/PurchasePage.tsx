import { useEffect, useRef } from 'react';
import { Segmented } from 'antd';
import { useSearchParams } from 'react-router';
import { InstanceCategory, SIZE_CATEGORIES } from '@console/contract';
import { GpuConfigurator } from './GpuConfigurator';
import { changePurchase, readPurchase, writePurchase, type PurchaseCategory, type PurchaseConfig, type PurchaseUpdate } from './purchaseQuery';
import { PublicPage } from './PublicPage';
import { SizeConfigurator } from './SizeConfigurator';

const CATEGORY_OPTIONS = (['Gpu', ...SIZE_CATEGORIES] as const).map((c) => ({ value: c, label: InstanceCategory.label(c) }));

/**
 * /stats/purchase: the configurator. The URL query is its state, replaced (not pushed) on every
 * change, so back leaves the page instead of undoing clicks, and the login redirect of a visitor
 * carries the whole configuration.
 */
export default function PurchasePage() {
  const [params] = useSearchParams();
  const config = readPurchase(params);
  const update = usePurchaseUpdate();
  const switchCategory = (category: PurchaseCategory) => update(config, { category });
  return (
    <PublicPage
      title="选择配置"
      intro="价格由服务器按所选配置实时计算，以下单时为准。"
      extra={<Segmented aria-label="产品类别" value={config.category} options={CATEGORY_OPTIONS} onChange={switchCategory} />}
    >
      {config.category === 'Gpu' ? (
        <GpuConfigurator config={config} onChange={update} />
      ) : (
        <SizeConfigurator key={config.category} config={config} onChange={update} />
      )}
    </PublicPage>
  );
}

/**
 * Writes each edit into the URL. Router updates render in a transition, which typing can keep
 * interrupting: an edit may arrive from a render that does not show the previous edit yet. It then
 * builds on what was last written instead of the stale render, so no edit undoes another.
 */
function usePurchaseUpdate(): PurchaseUpdate {
  const [params, setParams] = useSearchParams();
  const rendered = params.toString();
  const written = useRef<{ query: string; config: PurchaseConfig } | null>(null);
  useEffect(() => {
    if (written.current?.query === rendered) written.current = null; // the page has caught up
  }, [rendered]);
  return (shown, change) => {
    const base = written.current && written.current.query !== rendered ? written.current.config : shown;
    const next = changePurchase(base, change);
    const query = writePurchase(next);
    written.current = { query: query.toString(), config: next };
    setParams(query, { replace: true });
  };
}
