import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ImageSharePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="镜像分享" />
      </Card>
    </PageFrame>
  );
}
