import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DatasetCreatePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="创建数据集" />
      </Card>
    </PageFrame>
  );
}
