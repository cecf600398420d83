import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function LogPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="操作日志" />
      </Card>
    </PageFrame>
  );
}
