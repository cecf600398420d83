import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function RdpPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="远程桌面" />
      </Card>
    </PageFrame>
  );
}
