import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function KeyPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="API KEY 管理" />
      </Card>
    </PageFrame>
  );
}
