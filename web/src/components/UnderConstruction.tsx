import { Button, Result } from 'antd';
import { ToolOutlined } from '@ant-design/icons';
import { Link } from 'react-router';

/** The honest state of a page whose feature is not built yet: no placeholder data. */
export function UnderConstruction({ what = '该功能', backTo = '/' }: { what?: string; backTo?: string }) {
  return (
    <Result
      icon={<ToolOutlined />}
      title="建设中"
      subTitle={`${what}正在建设中，暂未开放，敬请期待。`}
      extra={
        <Link to={backTo}>
          <Button type="primary">返回首页</Button>
        </Link>
      }
    />
  );
}
