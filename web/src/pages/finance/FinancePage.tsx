import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function FinancePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="财务" />
      </Card>
    </PageFrame>
  );
}
