import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function StorageBillDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="存储账单详情" />
      </Card>
    </PageFrame>
  );
}
