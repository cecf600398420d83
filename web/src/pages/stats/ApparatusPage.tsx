import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ApparatusPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="算力设备" />
      </Card>
    </PageFrame>
  );
}
