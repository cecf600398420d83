import { App, Button, Flex, Popconfirm, Skeleton, Space, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { AppToken } from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { appTokenApi, appTokenQueries } from '../api/appToken';

/**
 * The API token of a ComfyUI instance (登录信息 tab): programs — ComfyUI clients, scripts — reach the
 * instance's ComfyUI at its address with it, without a browser login. Made on request; replacing or
 * revoking it, after a confirmation, cuts off whatever used the old one at once.
 */
export function AppTokenPanel({ instanceId }: { instanceId: string }) {
  const queryClient = useQueryClient();
  const { message } = App.useApp();
  const query = appTokenQueries.one(instanceId);
  const token = useQuery(query);
  const settle = (data: AppToken) => queryClient.setQueryData(query.queryKey, data);
  const issue = useMutation({ mutationFn: (renew: boolean) => appTokenApi.issue(instanceId, renew), onSuccess: settle });
  const revoke = useMutation({ mutationFn: () => appTokenApi.revoke(instanceId), onSuccess: settle });

  if (token.isPending) return <Skeleton.Input active size="small" />;
  if (token.isError) return <LoadError error={token.error} onRetry={() => void token.refetch()} />;
  const { token: value, apiUrl } = token.data;
  const busy = issue.isPending || revoke.isPending;
  return (
    <Flex vertical gap={8}>
      {apiUrl && (
        <Space size={8} wrap>
          <Typography.Text type="secondary">API 地址</Typography.Text>
          <Typography.Text className="mono" copyable={{ text: apiUrl, tooltips: ['复制 API 地址', '已复制'] }}>
            {apiUrl}
          </Typography.Text>
        </Space>
      )}
      {value ? (
        <Space size={8} wrap>
          <Typography.Text
            className="mono"
            style={{ wordBreak: 'break-all' }}
            copyable={{ text: value, tooltips: ['复制令牌', '已复制'], onCopy: () => void message.success('令牌已复制') }}
          >
            {value}
          </Typography.Text>
          <Popconfirm
            title="重新生成 API 令牌？"
            description="旧令牌立即失效，正在使用它的程序会被断开，需要换成新令牌。"
            okText="重新生成"
            okButtonProps={{ danger: true }}
            cancelText="取消"
            onConfirm={() => issue.mutateAsync(true).catch(() => undefined)}
          >
            <Button size="small" disabled={busy}>
              重新生成
            </Button>
          </Popconfirm>
          <Popconfirm
            title="吊销 API 令牌？"
            description="吊销后令牌立即失效，正在使用它的程序会被断开；之后可以再生成新令牌。"
            okText="吊销"
            okButtonProps={{ danger: true }}
            cancelText="取消"
            onConfirm={() => revoke.mutateAsync().catch(() => undefined)}
          >
            <Button size="small" danger disabled={busy}>
              吊销
            </Button>
          </Popconfirm>
        </Space>
      ) : (
        <Space size={8} wrap>
          <Typography.Text type="secondary">尚未生成</Typography.Text>
          <Button size="small" type="primary" loading={issue.isPending} onClick={() => issue.mutate(false)}>
            生成 API 令牌
          </Button>
        </Space>
      )}
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        供程序（如 ComfyUI 客户端、脚本）调用本实例的 ComfyUI 接口：请求头带 Authorization: Bearer &lt;令牌&gt;，WebSocket 可在地址后加
        ?token=&lt;令牌&gt;。令牌等同于本实例 ComfyUI 的访问权限，请勿外泄。
      </Typography.Text>
    </Flex>
  );
}
