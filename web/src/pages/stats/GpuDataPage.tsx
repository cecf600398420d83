import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function GpuDataPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="数据存储" />
      </Card>
    </PageFrame>
  );
}
