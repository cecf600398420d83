import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ModelBillDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="模型账单详情" />
      </Card>
    </PageFrame>
  );
}
