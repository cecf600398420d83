import { Button } from 'antd';
import { ErrorResult } from '../routing/ErrorResult';

/** A fetch failed: say so and let the user try again. */
export function LoadError({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  return (
    <ErrorResult
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
