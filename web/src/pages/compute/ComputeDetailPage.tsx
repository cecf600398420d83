import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ComputeDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="算力详情" />
      </Card>
    </PageFrame>
  );
}
