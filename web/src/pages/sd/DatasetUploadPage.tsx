import { Card } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { UnderConstruction } from '../../components/UnderConstruction';

export default function DatasetUploadPage() {
  return (
    <PageFrame>
      <Card>
        <UnderConstruction what="上传图片" />
      </Card>
    </PageFrame>
  );
}
