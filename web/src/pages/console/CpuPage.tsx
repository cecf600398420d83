import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function CpuPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="CPU 实例" />
      </Card>
    </PageFrame>
  );
}
