import { Tag, Tooltip } from 'antd';
import { SyncOutlined } from '@ant-design/icons';
import { ImageStatus, ImageStatusColor, type ImageStatus as Status, type UserImage } from '@console/contract';

/** antd Tag colours for the contract's image status colours. */
const TAG_COLOR = { green: 'success', red: 'error', blue: 'processing', purple: 'purple' } as const;

export function ImageStatusTag({ image }: { image: Pick<UserImage, 'status' | 'failReason'> }) {
  const tag = (
    <Tag color={TAG_COLOR[ImageStatusColor[image.status]]} icon={image.status === 'Build' ? <SyncOutlined spin /> : undefined} style={{ marginInlineEnd: 0 }}>
      {ImageStatus.label(image.status as Status)}
    </Tag>
  );
  return image.failReason ? <Tooltip title={image.failReason}>{tag}</Tooltip> : tag;
}
