import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DataDiskPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="数据盘" />
      </Card>
    </PageFrame>
  );
}
