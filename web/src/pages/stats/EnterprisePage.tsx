import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function EnterprisePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="企业服务" />
      </Card>
    </PageFrame>
  );
}
