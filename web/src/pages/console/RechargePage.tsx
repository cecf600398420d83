import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function RechargePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="在线充值" />
      </Card>
    </PageFrame>
  );
}
