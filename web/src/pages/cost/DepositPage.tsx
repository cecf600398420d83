import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DepositPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="押金" />
      </Card>
    </PageFrame>
  );
}
