/**
 * 迁移到其他主机: the hosts a stopped GPU instance may move to (same region and GPU type; its own
 * room first), with their free cards now. The server picks the best one unless the user chooses;
 * hosts without enough free cards cannot be chosen. Free of charge.
 */
import { useState } from 'react';
import { Alert, Empty, Flex, Modal, Radio, Skeleton, Space, Tag, Typography } from 'antd';
import { useMutation, useQuery } from '@tanstack/react-query';
import { InstanceTaskLabel, type Instance } from '@console/contract';
import { instancesApi, instanceQueries } from '../api/instances';
import { LoadError } from '../../../components/LoadError';

const AUTO = '';

export function MigrateModal({
  instance: i,
  notice,
  onClose,
  onSettled,
}: {
  instance: Instance;
  notice: string;
  onClose: () => void;
  onSettled: (answer?: unknown) => void;
}) {
  const [hostId, setHostId] = useState(AUTO);
  const targets = useQuery(instanceQueries.migrateTargets(i.id));
  const migrate = useMutation({
    mutationFn: () => instancesApi.migrate(i.id, hostId || undefined),
    onSettled: (answer) => onSettled(answer),
    onSuccess: onClose,
  });
  const available = targets.data?.filter((t) => t.available) ?? [];

  return (
    <Modal
      open
      title={`${InstanceTaskLabel.migrate}「${i.name}」`}
      okText="确认迁移"
      cancelText="取消"
      okButtonProps={{ disabled: !targets.data || available.length === 0 }}
      confirmLoading={migrate.isPending}
      onOk={() => migrate.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={560}
    >
      <Flex vertical gap={12}>
        <Typography.Paragraph type="secondary" style={{ margin: 0 }}>
          {notice}
        </Typography.Paragraph>
        {targets.isError ? (
          <LoadError error={targets.error} onRetry={() => void targets.refetch()} />
        ) : !targets.data ? (
          <Skeleton active paragraph={{ rows: 3 }} />
        ) : available.length === 0 ? (
          <Empty description={`同地区暂无空闲 ${i.gpuCount} 卡的 ${i.gpuName ?? ''} 主机，请稍后再试，或使用无卡模式开机`} />
        ) : (
          <Radio.Group aria-label="目标主机" value={hostId} onChange={(e) => setHostId(e.target.value as string)}>
            <Space direction="vertical">
              <Radio value={AUTO}>自动选择（推荐：本机房优先，空闲卡最多）</Radio>
              {targets.data.map((t) => (
                <Radio key={t.hostId} value={t.hostId} disabled={!t.available}>
                  <Space size={6}>
                    <span>{t.hostName}</span>
                    <Typography.Text type="secondary">{t.roomName}</Typography.Text>
                    {t.sameRoom && <Tag color="purple">本机房</Tag>}
                    <Typography.Text type={t.available ? 'success' : 'secondary'}>
                      空闲 {t.gpuFree} 卡{t.available ? '' : `（需 ${i.gpuCount} 卡）`}
                    </Typography.Text>
                  </Space>
                </Radio>
              ))}
            </Space>
          </Radio.Group>
        )}
        {migrate.isError && <Alert type="error" showIcon title="迁移未开始，请按提示处理后重试" />}
      </Flex>
    </Modal>
  );
}
