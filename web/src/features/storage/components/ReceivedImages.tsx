import { useState } from 'react';
import { Button, Card, Flex, Input, Popconfirm, Space, Table, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { IMAGE_SHARE_CODE_LENGTH, type ReceivedImage } from '@console/contract';
import { formatTime } from '../../../components/orderViews';
import { isApiError } from '../../../api/errors';
import { STORAGE_KEYS, storageApi, storageQueries } from '../api/storage';
import { purchaseWithImage } from '../utils/imagePurchase';
import { StorageSize } from './ImageDetailDrawer';

/** "使用共享镜像": the code another account gave; why it was refused shows under the field. */
function RedeemCode() {
  const queryClient = useQueryClient();
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [added, setAdded] = useState<string | null>(null);
  const redeem = useMutation({
    mutationFn: (c: string) => storageApi.redeem(c),
    onSuccess: (image) => {
      setCode('');
      setError(null);
      setAdded(`已添加「${image.name}」，可用它创建实例`);
      void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.received });
    },
    onError: (e) => {
      setAdded(null);
      setError(isApiError(e) ? e.message : '添加失败，请稍后重试');
    },
  });
  const submit = () => {
    const c = code.trim();
    if (!c) return setError('请输入共享码');
    redeem.mutate(c);
  };
  return (
    <Flex vertical gap={4}>
      <Space.Compact style={{ maxWidth: 420 }}>
        <Input
          aria-label="共享码"
          placeholder={`输入他人分享的 ${IMAGE_SHARE_CODE_LENGTH} 位共享码`}
          value={code}
          maxLength={IMAGE_SHARE_CODE_LENGTH + 4}
          status={error ? 'error' : undefined}
          onChange={(e) => {
            setCode(e.target.value);
            setError(null);
          }}
          onPressEnter={submit}
        />
        <Button type="primary" loading={redeem.isPending} onClick={submit}>
          使用共享镜像
        </Button>
      </Space.Compact>
      {error ? <Typography.Text type="danger">{error}</Typography.Text> : null}
      {added ? <Typography.Text type="success">{added}</Typography.Text> : null}
    </Flex>
  );
}

/** 共享给我的镜像: read only — create an instance from it, or take it off my list. */
export function ReceivedImages() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const list = useQuery(storageQueries.received());
  const drop = useMutation({
    mutationFn: (id: string) => storageApi.dropReceived(id),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.received }),
  });
  return (
    <Card title="共享给我的镜像" style={{ marginTop: 16 }}>
      <Flex vertical gap={16}>
        <RedeemCode />
        <Table<ReceivedImage>
          rowKey="id"
          size="middle"
          loading={list.isLoading}
          pagination={false}
          dataSource={list.data?.items ?? []}
          locale={{ emptyText: '还没有他人共享给你的镜像：输入共享码即可添加' }}
          scroll={{ x: 900 }}
          columns={[
            { title: '镜像名称', dataIndex: 'name', width: 200 },
            { title: '分享者', dataIndex: 'owner', width: 130 },
            {
              title: '基础镜像',
              key: 'base',
              width: 200,
              render: (_, i) => i.storage?.base?.name ?? i.baseImageName ?? '主机自身的系统',
            },
            { title: '大小', key: 'size', width: 150, render: (_, i) => <StorageSize storage={i.storage} sizeGb={i.sizeGb} /> },
            { title: '添加时间', dataIndex: 'receivedAt', width: 170, render: (v: string) => formatTime(v) },
            {
              title: '操作',
              key: 'op',
              width: 170,
              fixed: 'end',
              render: (_, i) => (
                <Space size={0}>
                  <Button type="link" size="small" onClick={() => navigate(purchaseWithImage(i))}>
                    创建实例
                  </Button>
                  <Popconfirm
                    title={`从列表移除「${i.name}」？`}
                    description="之后需要分享者的共享码才能再添加"
                    okText="移除"
                    cancelText="取消"
                    onConfirm={() => drop.mutateAsync(i.id)}
                  >
                    <Button type="link" size="small" danger>
                      移除
                    </Button>
                  </Popconfirm>
                </Space>
              ),
            },
          ]}
        />
      </Flex>
    </Card>
  );
}
