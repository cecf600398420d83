import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DataMirrorPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="我的镜像" />
      </Card>
    </PageFrame>
  );
}
