import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ServerBillDetailPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="服务器账单详情" />
      </Card>
    </PageFrame>
  );
}
