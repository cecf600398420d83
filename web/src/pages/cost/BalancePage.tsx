import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function BalancePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="我的余额" />
      </Card>
    </PageFrame>
  );
}
