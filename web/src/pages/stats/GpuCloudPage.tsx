import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';
import { PromoBanner } from './PromoBanner';

/** /stats/cloud/gpu: promotion and the GPU market (the market arrives in a later issue). */
export default function GpuCloudPage() {
  return (
    <PageFrame>
      <PromoBanner />
      <Card title="GPU 市场">
        <UnderConstruction what="GPU 市场" />
      </Card>
    </PageFrame>
  );
}
