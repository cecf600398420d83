import { App, Button, Space, Tag, Typography, type TableColumnsType } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { DATASET_KIND_LABELS, DATASET_MAX_IMAGES, DATASET_MAX_PER_ACCOUNT, PAGE, type Dataset } from '@console/contract';
import { DATASET_KEYS, datasetApi } from '../api/datasets';
import { formatBytes } from '../../../components/format';
import { formatTime } from '../../../components/orderViews';
import { PagedListPage } from '../../../components/PagedListPage';
import { datasetDetailPath, datasetUploadPath } from '../utils/paths';

const KIND_COLOR = { person: 'magenta', style: 'purple', concept: 'geekblue' } as const;

/** 删除数据集 asks first: the images and captions go with it. */
export function confirmDatasetDelete(modal: ReturnType<typeof App.useApp>['modal'], d: Dataset, remove: () => Promise<unknown>) {
  modal.confirm({
    title: `确认删除数据集「${d.name}」？`,
    content: `其中的 ${d.imageCount} 张图片和标注将一并删除，无法恢复。`,
    okText: '确认删除',
    okButtonProps: { danger: true },
    cancelText: '取消',
    onOk: () => remove().catch(() => undefined),
  });
}

/**
 * /sd/dataset — my datasets: images with captions that LoRA training learns from. Creating one needs
 * a certified account (the route guard of /sd/dataset/create shows the real-name dialog, spec §4/§5).
 */
export default function DatasetPage() {
  const { modal } = App.useApp();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => datasetApi.remove(id),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: DATASET_KEYS.all }),
  });

  const confirmDelete = (d: Dataset) => confirmDatasetDelete(modal, d, () => remove.mutateAsync(d.id));

  const columns: TableColumnsType<Dataset> = [
    {
      title: '数据集名称',
      key: 'name',
      width: 220,
      render: (_, d) => (
        <Space direction="vertical" size={0}>
          <Link to={datasetDetailPath(d.id)}>{d.name}</Link>
          {d.description && (
            <Typography.Text type="secondary" ellipsis style={{ maxWidth: 260, fontSize: 12 }}>
              {d.description}
            </Typography.Text>
          )}
        </Space>
      ),
    },
    { title: '类型', key: 'kind', width: 90, render: (_, d) => <Tag color={KIND_COLOR[d.kind]}>{DATASET_KIND_LABELS[d.kind]}</Tag> },
    { title: '触发词', key: 'trigger', width: 120, render: (_, d) => (d.triggerWord ? <Typography.Text code>{d.triggerWord}</Typography.Text> : '--') },
    {
      title: '图片',
      key: 'images',
      width: 140,
      render: (_, d) => (
        <span>
          {d.imageCount} / {DATASET_MAX_IMAGES}
          {d.uncaptioned > 0 && <Typography.Text type="warning">（{d.uncaptioned} 张未标注）</Typography.Text>}
        </span>
      ),
    },
    { title: '大小', key: 'bytes', width: 100, render: (_, d) => formatBytes(d.bytes) },
    { title: '创建时间', key: 'createdAt', width: 170, render: (_, d) => formatTime(d.createdAt) },
    {
      title: '操作',
      key: 'actions',
      width: 250,
      fixed: 'right',
      render: (_, d) => (
        <Space size={0} wrap>
          <Button type="link" size="small" onClick={() => navigate(datasetDetailPath(d.id))}>
            查看与标注
          </Button>
          <Button type="link" size="small" onClick={() => navigate(datasetUploadPath(d.id))}>
            上传图片
          </Button>
          <Button type="link" size="small" danger onClick={() => confirmDelete(d)}>
            删除
          </Button>
        </Space>
      ),
    },
  ];

  return (
    <PagedListPage<Dataset, Awaited<ReturnType<typeof datasetApi.list>>>
      queryKey={DATASET_KEYS.list}
      queryFn={(paging, signal) => datasetApi.list(paging, signal)}
      extra={
        <Link to={PAGE.sdDatasetCreate}>
          <Button type="primary" icon={<PlusOutlined />}>
            创建数据集
          </Button>
        </Link>
      }
      notice={(data) => ({
        title: '数据集是 LoRA 训练的素材',
        description: `每个数据集最多 ${DATASET_MAX_IMAGES} 张图片（png、jpg、webp、bmp，单张不超过 20MB），每张配一段标注；每个账号最多 ${DATASET_MAX_PER_ACCOUNT} 个数据集${data ? `，已创建 ${data.total} 个` : ''}。创建数据集需要先完成实名认证。`,
      })}
      empty={{ text: '还没有数据集', to: PAGE.sdDatasetCreate, action: '创建第一个数据集' }}
      unit="个数据集"
      table={{ rowKey: 'id', columns, scroll: { x: 1090 } }}
    />
  );
}
