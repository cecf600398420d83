import { Button, Card, Descriptions, Flex, Result, Skeleton, Tag, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { InstanceCategory, PAGE } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { storageQueries } from '../api/storage';
import { LoadError } from '../../../components/LoadError';
import { formatTime } from '../../../components/orderViews';
import { PageFrame } from '../../../components/PageFrame';
import { purchaseWithImage } from '../utils/imagePurchase';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Not shared (any more), deleted, never existed, or a malformed id: one answer. */
const isGone = (e: unknown) => isApiError(e, 'IMAGE_NOT_SHARED') || (isApiError(e) && (e.status === 404 || e.status === 400));

/**
 * /image/share?id=… (spec §2, login required): an image another user shared with a link, and a
 * button that opens the purchase page with it preselected.
 */
export default function ImageSharePage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const id = params.get('id') ?? '';
  const valid = UUID.test(id);
  const image = useQuery({ ...storageQueries.shared(id), enabled: valid, retry: false });

  const gone = (
    <Result
      status="404"
      title="镜像不存在或已取消分享"
      subTitle="分享者可能已关闭分享或删除了该镜像，请向分享者确认链接。"
      extra={
        <Link to={PAGE.cloudGpu}>
          <Button type="primary">浏览 GPU 算力市场</Button>
        </Link>
      }
    />
  );

  return (
    <PageFrame>
      <Card style={{ maxWidth: 760 }}>
        {!valid ? (
          gone
        ) : image.isPending ? (
          <Skeleton active paragraph={{ rows: 5 }} />
        ) : image.isError ? (
          isGone(image.error) ? (
            gone
          ) : (
            <LoadError error={image.error} onRetry={() => void image.refetch()} />
          )
        ) : (
          <Flex vertical gap={20}>
            <Flex align="center" gap={10} wrap>
              <Typography.Title level={4} style={{ margin: 0 }}>
                {image.data.name}
              </Typography.Title>
              <Tag color="purple">{image.data.mine ? '我的镜像' : '分享的镜像'}</Tag>
            </Flex>
            <Descriptions
              column={1}
              size="small"
              bordered
              items={[
                { key: 'base', label: '基础镜像', children: image.data.baseImageName ?? '自定义环境' },
                {
                  key: 'kind',
                  label: '适用实例',
                  children: `${InstanceCategory.label(image.data.category)}${image.data.gpuName ? `（制作于 ${image.data.gpuName}）` : ''}`,
                },
                { key: 'size', label: '镜像大小', children: image.data.sizeGb === null ? '--' : `${image.data.sizeGb} GB` },
                { key: 'owner', label: '分享者', children: image.data.owner },
                { key: 'created', label: '创建时间', children: formatTime(image.data.createdAt) },
              ]}
            />
            <Typography.Text type="secondary">使用该镜像创建实例后，实例的系统环境与镜像一致；费用按所选配置计算，与分享者无关。</Typography.Text>
            <Flex gap={12}>
              <Button type="primary" onClick={() => navigate(purchaseWithImage(image.data))}>
                使用该镜像创建实例
              </Button>
              <Link to={PAGE.gpudataMirror}>
                <Button>我的镜像</Button>
              </Link>
            </Flex>
          </Flex>
        )}
      </Card>
    </PageFrame>
  );
}
