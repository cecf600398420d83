import { App, Button, Descriptions, Drawer, Flex, Popconfirm, Table, Tag, Typography } from 'antd';
import { CopyOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { InstanceCategory, type ImageStorage, type UserImage } from '@console/contract';
import { formatBytes } from '../../../components/format';
import { formatTime } from '../../../components/orderViews';
import { STORAGE_KEYS, storageApi, storageQueries } from '../api/storage';
import { ImageStatusTag } from './ImageStatusTag';

/** "sha256:0123456789ab…" → "0123456789ab": what people compare by eye. */
export function shortDigest(digest: string | null): string {
  return digest ? digest.replace(/^sha256:/, '').slice(0, 12) : '归档文件';
}

/** The size as the host keeps it: compressed, and unpacked where known; the simulated fleet's are labelled. */
export function StorageSize({ storage, sizeGb }: { storage: ImageStorage | null; sizeGb: number | null }) {
  if (!storage) return <>{sizeGb === null ? '--' : `${sizeGb} GB`}</>;
  return (
    <Flex vertical gap={2}>
      <span>
        {formatBytes(storage.sizeBytes)}
        {storage.simulated ? (
          <Tag style={{ marginInlineStart: 6 }} color="default">
            模拟
          </Tag>
        ) : null}
      </span>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        压缩后{storage.unpackedBytes !== null ? ` · 解压后 ${formatBytes(storage.unpackedBytes)}` : ''}
      </Typography.Text>
    </Flex>
  );
}

/** The base an image was made on: the catalogue's name, and the OCI reference where the host has one. */
function BaseOf({ image }: { image: Pick<UserImage, 'baseImageName' | 'storage'> }) {
  const base = image.storage?.base;
  if (!base && !image.baseImageName) return <>主机自身的系统</>;
  return (
    <Flex vertical gap={2}>
      <span>{base?.name ?? image.baseImageName}</span>
      {base ? (
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {base.ref ?? '（无标签）'} · {shortDigest(base.digest)}
        </Typography.Text>
      ) : null}
    </Flex>
  );
}

export function LayerTable({ storage }: { storage: ImageStorage }) {
  const rows = storage.layers.map((l, i) => ({ ...l, key: `${i}`, own: i === storage.layers.length - 1 }));
  return (
    <Table
      size="small"
      pagination={false}
      dataSource={rows}
      columns={[
        { title: '#', key: 'n', width: 40, render: (_, __, i) => i + 1 },
        {
          title: '层',
          key: 'digest',
          render: (_, l) => (
            <span>
              <Typography.Text code>{shortDigest(l.digest)}</Typography.Text>
              {l.own ? <Tag color="blue">实例的改动</Tag> : null}
            </span>
          ),
        },
        { title: '大小（压缩后）', key: 'size', width: 130, render: (_, l) => formatBytes(l.sizeBytes) },
      ]}
    />
  );
}

/** The owner's 共享码: make one, copy it, revoke it (those who added it then lose the image). */
function ShareCode({ image }: { image: UserImage }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const changed = () => void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.images });
  const create = useMutation({ mutationFn: () => storageApi.createShareCode(image.id), onSettled: changed });
  const revoke = useMutation({ mutationFn: () => storageApi.revokeShareCode(image.id), onSettled: changed });
  const usable = image.status === 'Active' || image.status === 'Active_NotAllowedMigrate';
  if (!image.shareCode) {
    return (
      <Flex vertical gap={4} align="start">
        <Button size="small" disabled={!usable} loading={create.isPending} onClick={() => create.mutate()}>
          生成共享码
        </Button>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {usable ? '把共享码发给其他账号，对方在“使用共享镜像”中输入后即可用它创建实例（只读）' : '制作完成后可生成共享码'}
        </Typography.Text>
      </Flex>
    );
  }
  const copy = () =>
    void navigator.clipboard?.writeText(image.shareCode!).then(
      () => void message.success('共享码已复制'),
      () => void message.info(image.shareCode!),
    );
  return (
    <Flex vertical gap={4} align="start">
      <Flex gap={8} align="center">
        <Typography.Text strong code aria-label="共享码">
          {image.shareCode}
        </Typography.Text>
        <Button size="small" type="link" icon={<CopyOutlined />} onClick={copy}>
          复制
        </Button>
        <Popconfirm
          title="撤销共享码？"
          description="已添加该镜像的账号将不能再用它创建实例"
          okText="撤销"
          cancelText="取消"
          onConfirm={() => revoke.mutateAsync()}
        >
          <Button size="small" type="link" danger loading={revoke.isPending}>
            撤销
          </Button>
        </Popconfirm>
      </Flex>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        已有 {image.shareCodeUsers} 个账号在使用
      </Typography.Text>
    </Flex>
  );
}

/** 镜像详情 of the image `id` (null: closed): status, base, size, when it was made, its layers and its 共享码. */
export function ImageDetailDrawer({ id, onClose }: { id: string | null; onClose: () => void }) {
  const detail = useQuery({ ...storageQueries.detail(id ?? ''), enabled: Boolean(id) });
  const image = id ? (detail.data ?? null) : null;
  const storage = image?.storage ?? null;
  return (
    <Drawer
      open={Boolean(id)}
      loading={Boolean(id) && detail.isLoading}
      onClose={onClose}
      title={image ? `镜像详情：${image.name}` : '镜像详情'}
      size={560}
      destroyOnHidden
    >
      {image ? (
        <Flex vertical gap={16}>
          <Descriptions column={1} size="small" bordered>
            <Descriptions.Item label="状态">
              <ImageStatusTag image={image} />
            </Descriptions.Item>
            <Descriptions.Item label="基础镜像">
              <BaseOf image={image} />
            </Descriptions.Item>
            <Descriptions.Item label="大小">
              <StorageSize storage={storage} sizeGb={image.sizeGb} />
            </Descriptions.Item>
            <Descriptions.Item label="来源">
              {InstanceCategory.label(image.category)}
              {image.gpuName ? ` · ${image.gpuName}` : ''} · 实例 {image.sourceInstanceName}
            </Descriptions.Item>
            <Descriptions.Item label="制作时间">{formatTime(storage?.createdAt ?? image.createdAt)}</Descriptions.Item>
            <Descriptions.Item label="共享码">
              <ShareCode image={image} />
            </Descriptions.Item>
          </Descriptions>
          {storage ? (
            <>
              <Typography.Title level={5} style={{ margin: 0 }}>
                镜像层（{storage.layers.length}）{storage.simulated ? <Tag>模拟数据</Tag> : null}
              </Typography.Title>
              <LayerTable storage={storage} />
            </>
          ) : (
            <Typography.Text type="secondary">{image.status === 'Build' ? '制作完成后显示镜像层' : '主机上暂无该镜像的分层信息'}</Typography.Text>
          )}
        </Flex>
      ) : null}
    </Drawer>
  );
}
