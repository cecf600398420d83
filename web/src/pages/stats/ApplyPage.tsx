import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ApplyPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="镜像应用市场" />
      </Card>
    </PageFrame>
  );
}
