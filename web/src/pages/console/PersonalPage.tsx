import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function PersonalPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="个人中心" />
      </Card>
    </PageFrame>
  );
}
