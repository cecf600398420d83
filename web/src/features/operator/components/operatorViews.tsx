import { Form, Input, Modal, Tag } from 'antd';
import { CertStatus, CertType, type CertStatus as Status, type CertType as Type } from '@console/contract';

export { formatMinute } from '../../../lib/time';

const STATUS_COLOR: Record<Status, string | undefined> = { Init: undefined, Pending: 'processing', Succeed: 'success', Failed: 'error' };

/** Init has no label in the spec: it is an application still being filled in. */
export function CertStatusTag({ status }: { status: Status }) {
  return <Tag color={STATUS_COLOR[status]}>{CertStatus.label(status) || '未提交'}</Tag>;
}

const TYPE_COLOR: Record<Type, string | undefined> = { Uncertified: undefined, Personal: 'blue', Enterprise: 'purple' };

export function CertTypeTag({ type }: { type: Type }) {
  return <Tag color={TYPE_COLOR[type]}>{CertType.label(type)}</Tag>;
}

/**
 * The reason is what the user reads on their page, so it is required; `check` applies the contract's
 * schema of the endpoint (2-200 characters), so the messages are the server's.
 */
export function RejectModal({
  open,
  loading,
  title = '驳回申请',
  extra,
  placeholder,
  check,
  onCancel,
  onReject,
}: {
  open: boolean;
  loading: boolean;
  title?: string;
  extra: string;
  placeholder: string;
  /** The schema's message for a reason it refuses, or undefined. */
  check: (reason: string) => string | undefined;
  onCancel: () => void;
  onReject: (reason: string) => Promise<unknown>;
}) {
  const [form] = Form.useForm<{ reason: string }>();
  return (
    <Modal title={title} open={open} okText="确认驳回" okButtonProps={{ danger: true, loading }} onCancel={onCancel} onOk={() => form.submit()} destroyOnHidden>
      <Form form={form} layout="vertical" requiredMark={false} preserve={false} onFinish={(v) => onReject(v.reason.trim())}>
        <Form.Item
          name="reason"
          label="驳回原因"
          extra={extra}
          rules={[
            { required: true, whitespace: true, message: '请填写驳回原因' },
            {
              validator: async (_, value: string | undefined) => {
                if (!value?.trim()) return;
                const message = check(value);
                if (message) throw new Error(message);
              },
            },
          ]}
        >
          <Input.TextArea rows={4} maxLength={200} showCount placeholder={placeholder} />
        </Form.Item>
      </Form>
    </Modal>
  );
}
