import { Button, Result } from 'antd';
import { Link, Navigate, useSearchParams } from 'react-router';
import { PAGE } from '@console/contract';
import { safeRedirect } from '../../../auth/guard';
import { useSession } from '../../../session/useSession';

/**
 * Third-party login callback. The portal returns here with ?token=; the guard has already stored
 * it (and dropped it from the URL), so with a session we simply continue.
 */
export default function UpyunLoginPage() {
  const { loggedIn } = useSession();
  const [params] = useSearchParams();
  if (loggedIn) return <Navigate to={safeRedirect(params.get('redirect')) ?? PAGE.cloudGpu} replace />;
  return (
    <Result
      status="warning"
      title="第三方登录未完成"
      subTitle="没有收到登录凭证，请重新登录。"
      extra={
        <Link to={PAGE.login}>
          <Button type="primary">返回登录</Button>
        </Link>
      }
    />
  );
}
