import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DesktopPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="云桌面" />
      </Card>
    </PageFrame>
  );
}
