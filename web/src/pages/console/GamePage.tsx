import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function GamePage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="云游戏" />
      </Card>
    </PageFrame>
  );
}
