import { Button, Card } from 'antd';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DatasetPage() {
  return (
    <PageFrame
      extra={
        // Creating a dataset needs a certified account: the route guard shows the real-name dialog (spec §4/§5).
        <Link to={PAGE.sdDatasetCreate}>
          <Button type="primary">创建数据集</Button>
        </Link>
      }
    >
      <Card>
        <UnderConstruction what="数据集" />
      </Card>
    </PageFrame>
  );
}
