import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function FreeDesktopPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="免费云桌面" />
      </Card>
    </PageFrame>
  );
}
