import { Button, Result } from 'antd';

/** A fetch failed: say so and let the user try again. */
export function LoadError({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  return (
    <Result
      status="error"
      title="加载失败"
      subTitle={error instanceof Error ? error.message : '请稍后重试'}
      extra={
        <Button type="primary" onClick={onRetry}>
          重试
        </Button>
      }
    />
  );
}
