import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function AppPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="镜像应用管理" />
      </Card>
    </PageFrame>
  );
}
