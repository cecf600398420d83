import type { ReactNode } from 'react';
import { App, Upload } from 'antd';
import { REVIEW_IMAGE_MAX_BYTES } from '@console/contract';

/**
 * A picture an operator reviews (business licence, student card): one too large is refused here
 * with a message, any other is handed to onUpload at once; antd neither lists nor sends it.
 */
export function ReviewImageUpload({ what, onUpload, children }: { what: string; onUpload: (file: File) => void; children: ReactNode }) {
  const { message } = App.useApp();
  const beforeUpload = (file: File) => {
    if (file.size > REVIEW_IMAGE_MAX_BYTES) message.error(`${what}图片不能超过 5 MB，请压缩后重新上传`);
    else onUpload(file);
    return false;
  };
  return (
    <Upload accept="image/png,image/jpeg,image/webp,image/gif" showUploadList={false} beforeUpload={beforeUpload}>
      {children}
    </Upload>
  );
}
