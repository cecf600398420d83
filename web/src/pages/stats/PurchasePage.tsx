import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function PurchasePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="购买" />
      </Card>
    </PageFrame>
  );
}
