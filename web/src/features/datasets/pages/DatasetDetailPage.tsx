import { useEffect, useState } from 'react';
import { App, Button, Card, Checkbox, Descriptions, Empty, Flex, Input, InputNumber, List, Popconfirm, Popover, Space, Tag, Typography } from 'antd';
import { DeleteOutlined, DownloadOutlined, UploadOutlined } from '@ant-design/icons';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearchParams } from 'react-router';
import { DATASET_KIND_LABELS, DATASET_MAX_CAPTION, DATASET_MAX_IMAGES, PAGE, type Dataset, type DatasetImage } from '@console/contract';
import { DATASET_KEYS, datasetApi, type CaptionsBulk, datasetQueries } from '../api/datasets';
import { formatBytes } from '../../../components/format';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { PageLoading } from '../../../components/PageLoading';
import { confirmDatasetDelete } from './DatasetPage';
import { datasetUploadPath } from '../utils/paths';

const PAGE_SIZE = 24;

/**
 * /sd/dataset/detail?id= — a dataset's images with their captions: edit each caption in place, put the
 * trigger word in front of every caption or find and replace in bulk, show only the uncaptioned
 * ones, delete images; export the dataset as a zip laid out for sd-scripts.
 */
export default function DatasetDetailPage() {
  const [params] = useSearchParams();
  const id = params.get('id') ?? '';
  const navigate = useNavigate();
  const { modal, message } = App.useApp();
  const queryClient = useQueryClient();
  const [page, setPage] = useState(1);
  const [uncaptioned, setUncaptioned] = useState(false);
  const dataset = useQuery({ ...datasetQueries.one(id), enabled: !!id });
  const images = useQuery({
    ...datasetQueries.images(id, page, PAGE_SIZE, uncaptioned),
    enabled: !!id,
    placeholderData: keepPreviousData,
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: DATASET_KEYS.all });
  // The last image of the last page deleted: back to the page before, rather than an empty one.
  const lastPage = Math.max(1, Math.ceil((images.data?.total ?? 0) / PAGE_SIZE));
  useEffect(() => {
    if (images.data && page > lastPage) setPage(lastPage);
  }, [images.data, page, lastPage]);
  const remove = useMutation({
    mutationFn: () => datasetApi.remove(id),
    onSuccess: () => {
      refresh();
      navigate(PAGE.sdDataset);
    },
  });
  const bulk = useMutation({
    mutationFn: (body: CaptionsBulk) => datasetApi.captions(id, body),
    onSuccess: (r) => {
      void message.success(r.changed ? `已修改 ${r.changed} 条标注` : '没有需要修改的标注');
      refresh();
    },
  });

  if (!id || dataset.isError)
    return <PageFrame>{<LoadError error={dataset.error ?? new Error('缺少数据集 ID')} onRetry={() => navigate(PAGE.sdDataset)} />}</PageFrame>;
  if (!dataset.data) return <PageLoading />;
  const d = dataset.data;

  const confirmDelete = () => confirmDatasetDelete(modal, d, () => remove.mutateAsync());

  return (
    <PageFrame
      title={`数据集 · ${d.name}`}
      extra={
        <Space>
          <Button type="primary" icon={<UploadOutlined />} onClick={() => navigate(datasetUploadPath(id))}>
            上传图片
          </Button>
          <ExportButton dataset={d} />
          <Button danger onClick={confirmDelete}>
            删除数据集
          </Button>
        </Space>
      }
    >
      <Flex vertical gap={16}>
        <Card>
          <Descriptions column={{ xs: 1, md: 3 }} size="small">
            <Descriptions.Item label="类型">
              <Tag color="purple">{DATASET_KIND_LABELS[d.kind]}</Tag>
            </Descriptions.Item>
            <Descriptions.Item label="触发词">{d.triggerWord ? <Typography.Text code>{d.triggerWord}</Typography.Text> : '未设置'}</Descriptions.Item>
            <Descriptions.Item label="图片">
              <span data-testid="dataset-count">
                {d.imageCount} / {DATASET_MAX_IMAGES}
              </span>
              {d.uncaptioned > 0 && <Typography.Text type="warning">（{d.uncaptioned} 张未标注）</Typography.Text>}
            </Descriptions.Item>
            <Descriptions.Item label="大小">{formatBytes(d.bytes)}</Descriptions.Item>
            <Descriptions.Item label="描述" span={2}>
              {d.description || '--'}
            </Descriptions.Item>
          </Descriptions>
        </Card>
        <Card title="批量标注" size="small">
          <BulkCaptions triggerWord={d.triggerWord} busy={bulk.isPending} disabled={!d.imageCount} onApply={(body) => bulk.mutate(body)} />
        </Card>
        <Card
          title="图片与标注"
          extra={
            <Checkbox
              checked={uncaptioned}
              onChange={(e) => {
                setUncaptioned(e.target.checked);
                setPage(1);
              }}
            >
              只看未标注
            </Checkbox>
          }
        >
          {images.isError ? (
            <LoadError error={images.error} onRetry={() => void images.refetch()} />
          ) : (
            <List<DatasetImage>
              grid={{ gutter: 16, xs: 1, sm: 2, md: 3, lg: 4, xl: 4, xxl: 6 }}
              loading={images.isPending}
              dataSource={images.data?.items ?? []}
              locale={{
                emptyText: (
                  <Empty description={uncaptioned ? '所有图片都已标注' : '还没有图片'}>
                    {!uncaptioned && (
                      <Button type="primary" onClick={() => navigate(datasetUploadPath(id))}>
                        上传图片
                      </Button>
                    )}
                  </Empty>
                ),
              }}
              pagination={
                (images.data?.total ?? 0) > PAGE_SIZE && {
                  current: page,
                  pageSize: PAGE_SIZE,
                  total: images.data?.total ?? 0,
                  showSizeChanger: false,
                  showTotal: (t) => `共 ${t} 张`,
                  onChange: setPage,
                }
              }
              renderItem={(image) => (
                <List.Item>
                  {/* Keyed by the caption too: a bulk change shows in the field at once. */}
                  <ImageCard key={`${image.id}:${image.caption}`} datasetId={id} image={image} onChanged={refresh} />
                </List.Item>
              )}
            />
          )}
        </Card>
      </Flex>
    </PageFrame>
  );
}

/** One image: its thumbnail, facts, caption (saved when the field is left) and deletion. */
function ImageCard({ datasetId, image, onChanged }: { datasetId: string; image: DatasetImage; onChanged: () => void }) {
  const [caption, setCaption] = useState(image.caption);
  const save = useMutation({ mutationFn: (text: string) => datasetApi.setCaption(datasetId, image.id, text), onSuccess: onChanged });
  const remove = useMutation({ mutationFn: () => datasetApi.removeImage(datasetId, image.id), onSuccess: onChanged });
  return (
    <Card
      size="small"
      data-testid="dataset-image"
      cover={
        <a href={datasetApi.imageUrl(datasetId, image.id)} target="_blank" rel="noreferrer" title="查看原图">
          <img
            alt={image.name}
            src={datasetApi.imageUrl(datasetId, image.id, true)}
            loading="lazy"
            style={{ height: 160, width: '100%', objectFit: 'cover', background: '#f5f5f5' }}
          />
        </a>
      }
    >
      <Flex justify="space-between" align="center" gap={8}>
        <Typography.Text ellipsis title={image.name} style={{ maxWidth: 150 }}>
          {image.name}
        </Typography.Text>
        <Popconfirm
          title="删除这张图片？"
          description="图片和它的标注将一并删除。"
          okText="删除"
          okButtonProps={{ danger: true }}
          cancelText="取消"
          onConfirm={() => remove.mutateAsync().catch(() => undefined)}
        >
          <Button type="text" size="small" danger icon={<DeleteOutlined />} aria-label={`删除 ${image.name}`} />
        </Popconfirm>
      </Flex>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {image.width}×{image.height} · {formatBytes(image.bytes)}
      </Typography.Text>
      <Input.TextArea
        value={caption}
        onChange={(e) => setCaption(e.target.value)}
        onBlur={() => caption !== image.caption && save.mutate(caption)}
        placeholder="标注：描述这张图，如 1girl, red hair, smiling"
        autoSize={{ minRows: 2, maxRows: 5 }}
        maxLength={DATASET_MAX_CAPTION}
        style={{ marginTop: 8 }}
        aria-label={`${image.name} 的标注`}
        status={save.isError ? 'error' : undefined}
      />
    </Card>
  );
}

function BulkCaptions({
  triggerWord,
  busy,
  disabled,
  onApply,
}: {
  triggerWord: string;
  busy: boolean;
  disabled: boolean;
  onApply: (body: CaptionsBulk) => void;
}) {
  const [prefix, setPrefix] = useState(triggerWord);
  const [find, setFind] = useState('');
  const [replace, setReplace] = useState('');
  return (
    <Flex gap={24} wrap>
      <Space.Compact>
        <Input
          value={prefix}
          onChange={(e) => setPrefix(e.target.value)}
          placeholder="加在每条标注前面，如触发词"
          style={{ width: 240 }}
          aria-label="加在每条标注前面的文字"
        />
        <Button loading={busy} disabled={disabled || !prefix.trim()} onClick={() => onApply({ op: 'prefix', text: prefix.trim() })}>
          加到开头
        </Button>
      </Space.Compact>
      <Space.Compact>
        <Input value={find} onChange={(e) => setFind(e.target.value)} placeholder="查找" style={{ width: 160 }} aria-label="查找" />
        <Input value={replace} onChange={(e) => setReplace(e.target.value)} placeholder="替换为（可为空）" style={{ width: 160 }} aria-label="替换为" />
        <Button loading={busy} disabled={disabled || !find} onClick={() => onApply({ op: 'replace', find, replace })}>
          全部替换
        </Button>
      </Space.Compact>
    </Flex>
  );
}

/** 导出: the zip for sd-scripts, its folder named `<repeats>_<trigger>`. */
function ExportButton({ dataset: d }: { dataset: Dataset }) {
  const [repeats, setRepeats] = useState(10);
  return (
    <Popover
      trigger="click"
      title="导出为 sd-scripts 训练目录"
      content={
        <Space direction="vertical">
          <Space>
            重复次数
            <InputNumber min={1} max={100} precision={0} value={repeats} onChange={(v) => setRepeats(v ?? 10)} />
          </Space>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            文件夹名：{repeats}_{d.triggerWord || 'dataset'}
          </Typography.Text>
          <Button type="primary" href={datasetApi.exportUrl(d.id, repeats)} disabled={!d.imageCount} icon={<DownloadOutlined />}>
            下载 zip
          </Button>
        </Space>
      }
    >
      <Button icon={<DownloadOutlined />} disabled={!d.imageCount}>
        导出
      </Button>
    </Popover>
  );
}
