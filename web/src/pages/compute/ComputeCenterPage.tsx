import { Card, Tabs } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

/** /compute/center holds two tabs (spec §2): my compute and the compute shop. */
export default function ComputeCenterPage() {
  return (
    <PageFrame>
      <Card>
        <Tabs
          items={[
            { key: 'mine', label: '我的算力', children: <UnderConstruction what="我的算力" /> },
            { key: 'shop', label: '算力商城', children: <UnderConstruction what="算力商城" /> },
          ]}
        />
      </Card>
    </PageFrame>
  );
}
