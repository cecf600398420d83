import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ExperiencePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="在线体验" />
      </Card>
    </PageFrame>
  );
}
