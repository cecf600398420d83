import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function StatsPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="用量统计" />
      </Card>
    </PageFrame>
  );
}
