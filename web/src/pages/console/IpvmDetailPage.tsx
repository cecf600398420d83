import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function IpvmDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="实例详情" />
      </Card>
    </PageFrame>
  );
}
