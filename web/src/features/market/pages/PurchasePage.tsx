import { useEffect, useRef } from 'react';
import { Alert, Button, Segmented } from 'antd';
import { Link, useSearchParams } from 'react-router';
import { InstanceCategory, PAGE, SIZE_CATEGORIES } from '@console/contract';
import { mayBuy, type SessionUser } from '../../../auth/permissions';
import { useSession } from '../../../session/useSession';
import { GpuConfigurator } from '../components/GpuConfigurator';
import { changePurchase, readPurchase, writePurchase, type PurchaseCategory, type PurchaseConfig, type PurchaseUpdate } from '../utils/purchaseQuery';
import { PublicPage } from '../../../components/PublicPage';
import { SizeConfigurator } from '../components/SizeConfigurator';

const CATEGORY_OPTIONS = (['Gpu', ...SIZE_CATEGORIES] as const).map((c) => ({ value: c, label: InstanceCategory.label(c) }));

/**
 * The categories this account may buy (spec §6): all for a visitor or a main account; for a child,
 * GPU when it may create GPU instances or image applications (an application is bought on a GPU),
 * CPU instances when it deploys an application that needs no card on one, and no other sizes (CPU,
 * desktop, e-commerce and game machines are the main account's).
 */
function purchaseCategories(user: SessionUser | null, withApp: boolean) {
  return CATEGORY_OPTIONS.filter((o) =>
    o.value === 'Gpu' || (withApp && o.value === 'Generic') ? mayBuy(user, o.value) || mayBuy(user, 'App') : mayBuy(user, o.value),
  );
}

/**
 * /stats/purchase: the configurator. The URL query is its state, replaced (not pushed) on every
 * change, so back leaves the page instead of undoing clicks, and the login redirect of a visitor
 * carries the whole configuration.
 */
export default function PurchasePage() {
  const [params] = useSearchParams();
  const { user } = useSession();
  const asked = readPurchase(params);
  const options = purchaseCategories(user, !!asked.applicationId);
  // A category the account may not buy (an old link, a child) shows the first one it may.
  const config = options.some((o) => o.value === asked.category) ? asked : { ...asked, category: options[0]?.value ?? asked.category };
  const update = usePurchaseUpdate();
  const switchCategory = (category: PurchaseCategory) => update(config, { category });
  // A child that may deploy applications but not plain GPU instances buys through an application.
  const appsOnly = config.category === 'Gpu' && !mayBuy(user, 'Gpu') && !config.applicationId;
  return (
    <PublicPage
      title="选择配置"
      intro="价格由服务器按所选配置实时计算，以下单时为准。"
      extra={options.length > 1 && <Segmented aria-label="产品类别" value={config.category} options={options} onChange={switchCategory} />}
    >
      {appsOnly ? (
        <Alert
          type="info"
          showIcon
          title="子账号只能购买镜像应用"
          description="当前子账号有「创建镜像应用」权限，没有「创建 GPU 实例」权限：请在镜像应用页选择要部署的应用后下单。如需其他权限请联系主账号开通。"
          action={
            <Link to={PAGE.cloudApply}>
              <Button type="primary">去选择应用</Button>
            </Link>
          }
        />
      ) : config.category === 'Gpu' ? (
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
