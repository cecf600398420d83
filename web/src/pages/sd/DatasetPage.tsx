import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DatasetPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="数据集" />
      </Card>
    </PageFrame>
  );
}
