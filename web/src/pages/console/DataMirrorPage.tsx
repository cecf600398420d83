import { useState } from 'react';
import { Alert, App, Button, Card, Empty, Flex, Space, Switch, Table, Tag, Tooltip, Typography } from 'antd';
import { CopyOutlined, ReloadOutlined, SyncOutlined } from '@ant-design/icons';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import {
  IMAGE_BUILD_POLL_MS,
  ImageStatus,
  ImageStatusColor,
  InstanceCategory,
  PAGE,
  USER_IMAGE_NAME_MAX,
  type ImageStatus as Status,
  type UserImage,
} from '@console/contract';
import { STORAGE_KEYS, shareUrl, storageApi } from '../../api/storage';
import { LoadError } from '../../components/LoadError';
import { formatTime } from '../../components/orderViews';
import { PageFrame } from '../../components/PageFrame';
import { purchaseWithImage } from '../image/imagePurchase';

const PAGE_SIZES = ['10', '20', '50'];
/** antd Tag colours for the contract's image status colours. */
const TAG_COLOR = { green: 'success', red: 'error', blue: 'processing', purple: 'purple' } as const;

const usable = (i: UserImage) => i.status === 'Active' || i.status === 'Active_NotAllowedMigrate';

export function ImageStatusTag({ image }: { image: Pick<UserImage, 'status' | 'failReason'> }) {
  const tag = (
    <Tag color={TAG_COLOR[ImageStatusColor[image.status]]} icon={image.status === 'Build' ? <SyncOutlined spin /> : undefined} style={{ marginInlineEnd: 0 }}>
      {ImageStatus.label(image.status as Status)}
    </Tag>
  );
  return image.failReason ? <Tooltip title={image.failReason}>{tag}</Tooltip> : tag;
}

/**
 * /console/gpudata/mirror — my images: saved from stopped instances, made (制作中) → usable (可用)
 * or failed (制作失败), live while one is being made; share by link, delete, create an instance.
 */
export default function DataMirrorPage() {
  const { modal, message } = App.useApp();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [paging, setPaging] = useState({ page: 1, pageSize: 10 });
  const list = useQuery({
    queryKey: STORAGE_KEYS.imageList(paging.page, paging.pageSize),
    queryFn: ({ signal }) => storageApi.images(paging, signal),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.status !== 'error' && q.state.data?.items.some((i) => i.status === 'Build') ? IMAGE_BUILD_POLL_MS : false),
  });
  const changed = () => void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.images });
  const share = useMutation({ mutationFn: (v: { id: string; shared: boolean }) => storageApi.shareImage(v.id, v.shared), onSettled: changed });
  const rename = useMutation({ mutationFn: (v: { id: string; name: string }) => storageApi.renameImage(v.id, v.name), onSettled: changed });
  const remove = useMutation({ mutationFn: (id: string) => storageApi.deleteImage(id), onSettled: changed });

  const copy = (i: UserImage) => {
    void navigator.clipboard?.writeText(shareUrl(i.sharePath!)).then(
      () => void message.success('分享链接已复制'),
      () => void message.info(shareUrl(i.sharePath!)),
    );
  };

  const confirmDelete = (i: UserImage) =>
    modal.confirm({
      title: `确认删除镜像「${i.name}」？`,
      content: `删除后无法恢复${i.shared ? '，分享链接随即失效' : ''}；已用它创建的实例不受影响。`,
      okText: '确认删除',
      okButtonProps: { danger: true },
      cancelText: '取消',
      onOk: () => remove.mutateAsync(i.id).catch(() => undefined),
    });

  const data = list.data;
  return (
    <PageFrame extra={<Button icon={<ReloadOutlined />} onClick={() => void list.refetch()} loading={list.isFetching && !list.isPending} aria-label="刷新" />}>
      <Card>
        <Flex vertical gap={16}>
          <Alert
            type="info"
            showIcon
            title={data ? `镜像免费保存，每个账号最多 ${data.limit} 个，已用 ${data.used} 个` : '镜像免费保存'}
            description={
              <span>
                在实例关机（或无卡模式关机）后，从实例的“更多 → 保存镜像”制作镜像，制作期间实例处于“操作中”。镜像可用于创建新实例，开启分享后，登录用户可通过分享链接查看并使用它创建实例。
              </span>
            }
          />
          {list.isError && !data ? (
            <LoadError error={list.error} onRetry={() => void list.refetch()} />
          ) : (
            <Table<UserImage>
              rowKey="id"
              loading={list.isPending || (list.isFetching && list.isPlaceholderData)}
              dataSource={data?.items}
              scroll={{ x: 1200 }}
              tableLayout="fixed"
              locale={{
                emptyText: (
                  <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有镜像：实例关机后可保存为镜像">
                    <Link to={PAGE.gpuGeneric}>
                      <Button type="primary">查看 GPU 实例</Button>
                    </Link>
                  </Empty>
                ),
              }}
              pagination={{
                current: paging.page,
                pageSize: paging.pageSize,
                total: data?.total ?? 0,
                showSizeChanger: true,
                pageSizeOptions: PAGE_SIZES,
                showTotal: (t) => `共 ${t} 个镜像`,
                onChange: (page, pageSize) => setPaging({ page: pageSize === paging.pageSize ? page : 1, pageSize }),
              }}
              columns={[
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
                { title: '大小', key: 'size', width: 90, render: (_, i) => (i.sizeGb === null ? '--' : `${i.sizeGb} GB`) },
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
                  width: 190,
                  fixed: 'end',
                  render: (_, i) => (
                    <Space size={0} wrap>
                      <Button type="link" size="small" disabled={!usable(i)} onClick={() => navigate(purchaseWithImage(i))}>
                        创建实例
                      </Button>
                      <Tooltip title={i.status === 'Build' ? '制作中，完成后才能删除' : undefined}>
                        <Button type="link" size="small" danger disabled={i.status === 'Build'} onClick={() => confirmDelete(i)}>
                          删除
                        </Button>
                      </Tooltip>
                    </Space>
                  ),
                },
              ]}
            />
          )}
        </Flex>
      </Card>
    </PageFrame>
  );
}
