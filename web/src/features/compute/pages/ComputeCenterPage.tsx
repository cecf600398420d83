import { Tabs } from 'antd';
import { PageFrame } from '../../../components/PageFrame';
import { ComputeMine } from '../components/ComputeMine';
import { ComputeShop } from '../components/ComputeShop';
import { useComputeTab, type ComputeTab } from '../components/computeViews';

/**
 * /compute/center — 算力中心 (spec §2): 算力商城 sells GPU 时长包 and shows the two ways to run
 * SD WebUI / ComfyUI; 我的算力 shows the account's 时长包, the work running on GPU time and its
 * compute instances. The tab is kept in the URL (?tab=shop|mine).
 */
export default function ComputeCenterPage() {
  const tab = useComputeTab();
  return (
    <PageFrame>
      <Tabs
        activeKey={tab.value}
        onChange={(key) => tab.set(key as ComputeTab)}
        items={[
          { key: 'shop', label: '算力商城', children: <ComputeShop /> },
          { key: 'mine', label: '我的算力', children: <ComputeMine toShop={() => tab.set('shop')} /> },
        ]}
      />
    </PageFrame>
  );
}
