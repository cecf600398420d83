import { useState } from 'react';
import { App, Button, Flex, Space, Switch, Tooltip, Typography, type TableColumnsType } from 'antd';
import { CopyOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { IMAGE_BUILD_POLL_MS, InstanceCategory, PAGE, USER_IMAGE_NAME_MAX, type UserImage, type UserImagePage } from '@console/contract';
import { STORAGE_KEYS, shareUrl, storageApi } from '../api/storage';
import { formatTime } from '../../../components/orderViews';
import { PagedListPage } from '../../../components/PagedListPage';
import { purchaseWithImage } from '../utils/imagePurchase';
import { ImageStatusTag } from '../components/ImageStatusTag';
import { ImageDetailDrawer, StorageSize } from '../components/ImageDetailDrawer';
import { ReceivedImages } from '../components/ReceivedImages';

export { ImageStatusTag };

const usable = (i: UserImage) => i.status === 'Active' || i.status === 'Active_NotAllowedMigrate';

/** 创建实例 from a usable image; 删除 once it is no longer being made. */
function ImageActions({ image: i, onDelete, onDetail }: { image: UserImage; onDelete: (i: UserImage) => void; onDetail: (i: UserImage) => void }) {
  const navigate = useNavigate();
  return (
    <Space size={0} wrap>
      <Button type="link" size="small" onClick={() => onDetail(i)}>
        详情
      </Button>
      <Button type="link" size="small" disabled={!usable(i)} onClick={() => navigate(purchaseWithImage(i))}>
        创建实例
      </Button>
      <Tooltip title={i.status === 'Build' ? '制作中，完成后才能删除' : undefined}>
        <Button type="link" size="small" danger disabled={i.status === 'Build'} onClick={() => onDelete(i)}>
          删除
        </Button>
      </Tooltip>
    </Space>
  );
}

/**
 * /console/gpudata/mirror — my images: saved from stopped instances, made (制作中) → usable (可用)
 * or failed (制作失败), live while one is being made; share by link, delete, create an instance.
 */
export default function DataMirrorPage() {
  const { modal, message } = App.useApp();
  const queryClient = useQueryClient();
  const changed = () => void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.images });
  const share = useMutation({ mutationFn: (v: { id: string; shared: boolean }) => storageApi.shareImage(v.id, v.shared), onSettled: changed });
  const rename = useMutation({ mutationFn: (v: { id: string; name: string }) => storageApi.renameImage(v.id, v.name), onSettled: changed });
  const remove = useMutation({
    mutationFn: (id: string) => storageApi.deleteImage(id),
    onSuccess: (r) => void message.success(r.message),
    onSettled: changed,
  });
  const [detailId, setDetailId] = useState<string | null>(null);

  const copy = (i: UserImage) => {
    void navigator.clipboard?.writeText(shareUrl(i.sharePath!)).then(
      () => void message.success('分享链接已复制'),
      () => void message.info(shareUrl(i.sharePath!)),
    );
  };

  const confirmDelete = (i: UserImage) =>
    modal.confirm({
      title: `确认删除镜像「${i.name}」？`,
      content: `删除后无法恢复${i.shared ? '，分享链接随即失效' : ''}${i.shareCode ? '，共享码随即失效' : ''}；已用它创建的实例不受影响，主机上它独有的镜像层将被释放。`,
      okText: '确认删除',
      okButtonProps: { danger: true },
      cancelText: '取消',
      onOk: () => remove.mutateAsync(i.id).catch(() => undefined),
    });

  const columns: TableColumnsType<UserImage> = [
    {
      title: '镜像名称',
      key: 'name',
      width: 200,
      render: (_, i) => (
        <Typography.Text
          editable={{
            maxLength: USER_IMAGE_NAME_MAX,
            tooltip: '修改名称',
            triggerType: ['icon'],
            onChange: (name) => {
              const next = name.trim();
              if (next && next !== i.name) rename.mutate({ id: i.id, name: next });
            },
          }}
        >
          {i.name}
        </Typography.Text>
      ),
    },
    { title: '状态', key: 'status', width: 120, render: (_, i) => <ImageStatusTag image={i} /> },
    {
      title: '来源',
      key: 'source',
      width: 220,
      render: (_, i) => (
        <Flex vertical gap={2}>
          <span>{i.baseImageName ?? '自定义环境'}</span>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {InstanceCategory.label(i.category)}
            {i.gpuName ? ` · ${i.gpuName}` : ''} · 实例 {i.sourceInstanceName}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '大小', key: 'size', width: 150, render: (_, i) => <StorageSize storage={i.storage} sizeGb={i.sizeGb} /> },
    {
      title: '分享',
      key: 'share',
      width: 170,
      render: (_, i) => (
        <Space size={8}>
          <Switch
            size="small"
            aria-label={`分享 ${i.name}`}
            checked={i.shared}
            disabled={!usable(i) && !i.shared}
            loading={share.isPending && share.variables?.id === i.id}
            onChange={(shared) => share.mutate({ id: i.id, shared })}
          />
          {i.shared && i.sharePath ? (
            <Button type="link" size="small" icon={<CopyOutlined />} onClick={() => copy(i)} style={{ paddingInline: 0 }}>
              复制链接
            </Button>
          ) : (
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {usable(i) ? '未分享' : '制作完成后可分享'}
            </Typography.Text>
          )}
        </Space>
      ),
    },
    { title: '创建时间', dataIndex: 'createdAt', width: 170, render: (v: string) => formatTime(v) },
    {
      title: '操作',
      key: 'op',
      width: 210,
      fixed: 'end',
      render: (_, i) => <ImageActions image={i} onDelete={confirmDelete} onDetail={(x) => setDetailId(x.id)} />,
    },
  ];

  return (
    <PagedListPage<UserImage, UserImagePage>
      queryKey={STORAGE_KEYS.imageList}
      queryFn={(paging, signal) => storageApi.images(paging, signal)}
      poll={{ busy: (i) => i.status === 'Build', ms: IMAGE_BUILD_POLL_MS }}
      notice={(data) => ({
        title: data ? `镜像免费保存，每个账号最多 ${data.limit} 个，已用 ${data.used} 个` : '镜像免费保存',
        description:
          '在实例关机（或无卡模式关机）后，从实例的“更多 → 保存镜像”制作镜像，制作期间实例处于“操作中”。镜像可用于创建新实例，开启分享后，登录用户可通过分享链接查看并使用它创建实例；在“详情”中生成共享码发给其他账号，对方输入后即可使用（只读），撤销后随即失效。',
      })}
      empty={{ text: '还没有镜像：实例关机后可保存为镜像', to: PAGE.gpuGeneric, action: '查看 GPU 实例' }}
      unit="个镜像"
      table={{ rowKey: 'id', scroll: { x: 1300 }, columns }}
    >
      <ReceivedImages />
      <ImageDetailDrawer id={detailId} onClose={() => setDetailId(null)} />
    </PagedListPage>
  );
}
