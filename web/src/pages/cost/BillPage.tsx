import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function BillPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="账单" />
      </Card>
    </PageFrame>
  );
}
