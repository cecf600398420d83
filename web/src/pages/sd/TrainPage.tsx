import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function TrainPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="LoRA 训练" />
      </Card>
    </PageFrame>
  );
}
