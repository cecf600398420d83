import { Spin } from 'antd';

/** Shown while a page chunk or its first data loads. */
export function PageLoading() {
  return (
    <div style={{ display: 'flex', justifyContent: 'center', alignItems: 'center', minHeight: 240, width: '100%' }}>
      <Spin size="large" description="加载中…" />
    </div>
  );
}
