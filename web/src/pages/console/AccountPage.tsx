import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function AccountPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="账号中心" />
      </Card>
    </PageFrame>
  );
}
