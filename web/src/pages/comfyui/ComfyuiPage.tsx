import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function ComfyuiPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="工作流" />
      </Card>
    </PageFrame>
  );
}
