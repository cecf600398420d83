import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ResourcePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="资源包" />
      </Card>
    </PageFrame>
  );
}
