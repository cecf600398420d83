/**
 * 保存镜像: a stopped instance becomes an image of my images. The instance is 操作中 while the image
 * is made (制作中) and returns to where it was; images are kept free of charge, up to the account's
 * limit.
 */
import { App, Alert, Form, Input, Modal, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { USER_IMAGE_NAME_MAX, type ErrorName, type Instance } from '@console/contract';
import { reactToError } from '../../../api/client';
import { isApiError } from '../../../api/errors';
import { INSTANCE_KEYS } from '../api/instances';
import { STORAGE_KEYS, storageApi, storageQueries } from '../../storage';
import { getApiUi } from '../../../api/ui';

/** Letters (Chinese included), digits, space and . _ - ( ), as the server checks it. */
const NAME_PATTERN = /^[\p{L}\p{N} ._()（）-]+$/u;
/** Errors the dialog shows under the name field rather than as a toast. */
const FIELD_ERRORS: ErrorName[] = ['IMAGE_NAME_TAKEN', 'IMAGE_LIMIT_REACHED', 'VALIDATION_FAILED'];

export function SaveImageModal({ instance: i, onClose }: { instance: Instance; onClose: () => void }) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [form] = Form.useForm<{ name: string }>();
  // How many images the account keeps and may keep (quietly: a child without the data permission just does not see it).
  const quota = useQuery({ ...storageQueries.imageQuota(), retry: false });

  const save = useMutation({
    mutationFn: (name: string) => storageApi.saveImage(i.id, name),
    onSuccess: (image) => {
      void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
      void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.logsAll });
      void queryClient.invalidateQueries({ queryKey: STORAGE_KEYS.images });
      // The message holder sits outside the router: plain text (a <Link> there would have no router).
      void message.success(`镜像「${image.name}」制作中，可在“我的数据 → 我的镜像”查看进度`);
      onClose();
    },
    onError: (e) => {
      if (isApiError(e, ...FIELD_ERRORS)) {
        form.setFields([{ name: 'name', errors: [e.detail ? `${e.message}：${e.detail}` : e.message] }]);
      } else if (isApiError(e)) reactToError(e, getApiUi());
    },
  });

  const submit = async () => {
    const { name } = await form.validateFields();
    save.mutate(name.trim());
  };

  const q = quota.data;
  return (
    <Modal
      open
      title={`保存镜像「${i.name}」`}
      okText="保存镜像"
      cancelText="取消"
      confirmLoading={save.isPending}
      onOk={() => void submit().catch(() => undefined)}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form form={form} layout="vertical" onFinish={() => void submit().catch(() => undefined)}>
        <Alert
          type="info"
          showIcon
          style={{ marginBottom: 16 }}
          title="保存期间实例处于“操作中”，完成后恢复原状态"
          description={
            <span>
              镜像包含系统盘的环境（不含数据盘），可用于创建新实例或分享给其他用户。镜像免费保存
              {q ? `，每个账号最多 ${q.limit} 个（已有 ${q.used} 个）` : ''}。
            </span>
          }
        />
        <Form.Item
          name="name"
          label="镜像名称"
          rules={[
            { required: true, whitespace: true, message: '请输入镜像名称' },
            { max: USER_IMAGE_NAME_MAX, message: `镜像名称最多 ${USER_IMAGE_NAME_MAX} 个字` },
            { pattern: NAME_PATTERN, message: '镜像名称只能包含中英文、数字、空格和 . _ - ( )' },
          ]}
        >
          <Input maxLength={USER_IMAGE_NAME_MAX} showCount autoFocus aria-label="镜像名称" placeholder="如：SD 训练环境 v1" />
        </Form.Item>
        <Typography.Text type="secondary">
          来源实例：{i.name}（{i.imageName ?? i.userImageName ?? '自定义环境'}）
        </Typography.Text>
      </Form>
    </Modal>
  );
}
