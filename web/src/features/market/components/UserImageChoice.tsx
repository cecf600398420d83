import { Alert, Button, Skeleton, Tag, Typography } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { storageQueries } from '../../storage';
import type { SharedImage } from '@console/contract';

/** An image of my images, or one shared with a link, as the purchase page shows it (cached per id). */
export function useUserImage(id: string | undefined) {
  return useQuery({
    ...storageQueries.shared(id ?? ''),
    enabled: !!id,
    retry: false,
  });
}

export function userImageLabel(image: SharedImage): string {
  return `${image.mine ? '我的镜像' : '分享的镜像'}「${image.name}」${image.baseImageName ? `（基于 ${image.baseImageName}）` : ''}`;
}

/** The preselected saved image instead of the catalogue image list; 改选 goes back to the list. */
export function UserImageChoice({ id, onClear }: { id: string; onClear: () => void }) {
  const image = useUserImage(id);
  if (image.isPending) return <Skeleton.Input active />;
  if (image.isError)
    return (
      <Alert
        type="warning"
        showIcon
        title="所选镜像不存在或已取消分享"
        action={
          <Button size="small" onClick={onClear}>
            改选公共镜像
          </Button>
        }
      />
    );
  const i = image.data;
  return (
    <div className="app-choice" data-testid="user-image-choice">
      <div style={{ flex: 1, minWidth: 0 }}>
        <Typography.Text strong>{i.name}</Typography.Text>
        <Tag color="purple" style={{ marginLeft: 8 }}>
          {i.mine ? '我的镜像' : '分享的镜像'}
        </Tag>
        <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0', fontSize: 12 }}>
          {i.baseImageName ? `基于 ${i.baseImageName}` : '自定义环境'}
          {i.sizeGb !== null ? ` · ${i.sizeGb} GB` : ''}
          {i.mine ? '' : ` · 分享者 ${i.owner}`}
        </Typography.Paragraph>
      </div>
      <Button onClick={onClear}>改选公共镜像</Button>
    </div>
  );
}
