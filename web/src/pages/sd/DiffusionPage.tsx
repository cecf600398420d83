import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DiffusionPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="LoRA 生图" />
      </Card>
    </PageFrame>
  );
}
