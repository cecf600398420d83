import { Button } from 'antd';
import { isRouteErrorResponse, useLocation, useRouteError } from 'react-router';
import { PageLoading } from '../components/PageLoading';
import { isChunkLoadError, reloadOnceAt } from './chunkReload';
import { ErrorResult } from './ErrorResult';

/** Error boundary of every route. */
export function RouteError() {
  return <ErrorView error={useRouteError()} />;
}

/** Stale chunks reload once at the page being opened; anything else says what happened. */
export function ErrorView({ error }: { error: unknown }) {
  const location = useLocation();
  const target = location.pathname + location.search + location.hash;
  const chunkError = isChunkLoadError(error);

  if (chunkError && reloadOnceAt(target)) return <PageLoading />;
  if (isRouteErrorResponse(error) && error.status === 404) {
    return <ErrorResult notFound title="页面不存在" extra={<Button href="/">返回首页</Button>} />;
  }
  return (
    <ErrorResult
      title={chunkError ? '页面加载失败' : '页面出错了'}
      subTitle={chunkError ? '请检查网络后刷新重试。' : '请刷新重试，如果问题持续存在，请联系客服。'}
      extra={[
        <Button key="retry" type="primary" onClick={() => window.location.reload()}>
          刷新重试
        </Button>,
        <Button key="home" href="/">
          返回首页
        </Button>,
      ]}
    />
  );
}
