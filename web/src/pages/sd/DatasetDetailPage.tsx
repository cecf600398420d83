import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DatasetDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="数据集详情" />
      </Card>
    </PageFrame>
  );
}
