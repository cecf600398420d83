import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function EbusinessPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="跨境电商" />
      </Card>
    </PageFrame>
  );
}
