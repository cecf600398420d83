/** 画廊: every image made, newest first, each with 复用参数 (a workflow's: a link to the workflows) / 下载 / 删除. */
import { useEffect } from 'react';
import { Alert, Button, Card, Empty, Flex, Image, Pagination, Popconfirm, Skeleton, Tag, Tooltip, Typography, theme } from 'antd';
import { ApartmentOutlined, DeleteOutlined, DownloadOutlined, ReloadOutlined, RetweetOutlined } from '@ant-design/icons';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { formatBeijing, PAGE, type DiffusionImage } from '@console/contract';
import { DIFFUSION_KEYS, diffusionApi, diffusionQueries } from '../api/diffusion';
import { formatBytes } from '../../../components/format';
import { LoadError } from '../../../components/LoadError';
import { SimulatedMark } from '../../../components/Simulated';
import { nextPaging, useUrlPaging } from '../../../routing/useUrlPaging';
import { Note, UsedLoras } from './diffusionViews';
import { baseModelName } from '../../training';

export const GALLERY_SIZES: readonly number[] = [24, 48, 96];

function ImageCard({ image, onReuse }: { image: DiffusionImage; onReuse: (image: DiffusionImage) => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => diffusionApi.removeImage(image.id),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.images });
      void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.tasks });
    },
  });
  const { token } = theme.useToken();
  const p = image.params;
  return (
    <Card
      size="small"
      data-testid="gallery-image"
      styles={{ body: { padding: 10 } }}
      cover={
        <SimulatedMark service="images" block>
          <Image
            src={diffusionApi.thumbUrl(image.id)}
            alt={p.prompt}
            width="100%"
            height={200}
            style={{ objectFit: 'cover' }}
            preview={{ src: diffusionApi.imageUrl(image.id), cover: '查看大图' }}
          />
        </SimulatedMark>
      }
    >
      <Flex vertical gap={4}>
        <Typography.Paragraph ellipsis={{ rows: 2, tooltip: p.prompt }} style={{ margin: 0 }} data-testid="gallery-prompt">
          {p.prompt}
        </Typography.Paragraph>
        <Note>
          {image.width}×{image.height} · 种子 {image.seed}
        </Note>
        <Note>
          {baseModelName(p.baseModel)} · {p.sampler} · {p.steps} 步 · CFG {p.cfg}
        </Note>
        {image.workflowName !== null && (
          <div>
            <Tooltip title="由 ComfyUI 工作流生成：上面的参数只是工作流的概要">
              <Tag color="purple" variant="outlined" style={{ marginInlineEnd: 0, maxWidth: '100%' }} data-testid="gallery-workflow">
                <Typography.Text ellipsis style={{ color: 'inherit', fontSize: 12, maxWidth: 190 }}>
                  工作流：{image.workflowName}
                </Typography.Text>
              </Tag>
            </Tooltip>
          </div>
        )}
        <UsedLoras loras={image.loras} />
        <Note>
          {formatBeijing(image.createdAt)} · {formatBytes(image.bytes)}
        </Note>
        {/* Not the card's actions: antd styles every link there as plain grey text, 下载 among them. */}
        <Flex justify="space-between" style={{ borderTop: `1px solid ${token.colorBorderSecondary}`, paddingTop: 6, marginTop: 4 }}>
          {image.workflowName === null ? (
            <Tooltip title="把这张图的提示词、底模、LoRA、尺寸、步数、CFG、采样器和种子填回左侧表单">
              <Button type="text" size="small" icon={<RetweetOutlined />} onClick={() => onReuse(image)}>
                复用参数
              </Button>
            </Tooltip>
          ) : (
            // A workflow's picture: the form cannot hold the workflow, so it is opened where it can be run again.
            <Link to={PAGE.comfyui}>
              <Button type="text" size="small" icon={<ApartmentOutlined />}>
                工作流
              </Button>
            </Link>
          )}
          <Button type="text" size="small" icon={<DownloadOutlined />} href={diffusionApi.downloadUrl(image.id)}>
            下载
          </Button>
          <Popconfirm
            title="删除这张图片？"
            description="从画廊删除后无法恢复，已结算的费用不退回。"
            okText="删除"
            okButtonProps={{ danger: true }}
            cancelText="取消"
            onConfirm={() => remove.mutateAsync().catch(() => undefined)}
          >
            <Button type="text" size="small" danger icon={<DeleteOutlined />}>
              删除
            </Button>
          </Popconfirm>
        </Flex>
      </Flex>
    </Card>
  );
}

export function DiffusionGallery({ onReuse }: { onReuse: (image: DiffusionImage) => void }) {
  const { paging, set } = useUrlPaging({ key: 'gallery', sizes: GALLERY_SIZES });
  const images = useQuery({
    ...diffusionQueries.images(paging.page, paging.pageSize),
    placeholderData: keepPreviousData,
  });
  const total = images.data?.total ?? 0;
  // The last image of the last page deleted: back to the page before, rather than an empty one.
  const lastPage = Math.max(1, Math.ceil(total / paging.pageSize));
  useEffect(() => {
    if (images.data && !images.isPlaceholderData && paging.page > lastPage) set({ ...paging, page: lastPage });
  }, [images.data, images.isPlaceholderData, paging, lastPage, set]);

  return (
    <Card
      title="画廊"
      extra={
        <Flex gap={8} align="center">
          {images.data && <Note>共 {total} 张</Note>}
          <Button icon={<ReloadOutlined />} aria-label="刷新画廊" loading={images.isFetching && !images.isPending} onClick={() => void images.refetch()} />
        </Flex>
      }
    >
      {images.isError && !images.data ? (
        <LoadError error={images.error} onRetry={() => void images.refetch()} />
      ) : images.isPending ? (
        <Skeleton active />
      ) : images.data.items.length === 0 ? (
        <Empty
          image={Empty.PRESENTED_IMAGE_SIMPLE}
          description="画廊里还没有图片：在左侧写好提示词、选好底模和 LoRA 后点「生成」，生成的每一张都会保存在这里"
        />
      ) : (
        <Flex vertical gap={16}>
          {images.isError && <Alert type="warning" showIcon title={`画廊刷新失败：${images.error.message}`} />}
          <Image.PreviewGroup>
            <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(230px, 1fr))', gap: 12 }}>
              {images.data.items.map((image) => (
                <ImageCard key={image.id} image={image} onReuse={onReuse} />
              ))}
            </div>
          </Image.PreviewGroup>
          {total > GALLERY_SIZES[0]! && (
            <Pagination
              align="end"
              current={paging.page}
              pageSize={paging.pageSize}
              total={total}
              showSizeChanger
              pageSizeOptions={[...GALLERY_SIZES]}
              showTotal={(t) => `共 ${t} 张`}
              onChange={(page, pageSize) => set(nextPaging(paging, page, pageSize))}
            />
          )}
        </Flex>
      )}
    </Card>
  );
}
