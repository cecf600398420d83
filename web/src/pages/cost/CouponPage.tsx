import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function CouponPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="卡券包" />
      </Card>
    </PageFrame>
  );
}
