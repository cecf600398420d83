import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function GpuGenericPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="GPU 实例管理" />
      </Card>
    </PageFrame>
  );
}
