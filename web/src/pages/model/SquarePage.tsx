import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function SquarePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="模型广场" />
      </Card>
    </PageFrame>
  );
}
