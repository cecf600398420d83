/** The name of a workflow being created, imported or renamed. */
import { useEffect, useState, type ReactNode } from 'react';
import { Flex, Form, Input, Modal } from 'antd';

export interface NameRequest {
  title: string;
  okText: string;
  initial: string;
  /** Above the field: what is being saved (an imported file's nodes, say). */
  note?: ReactNode;
  /** Saves under the name; a rejection (name taken, say: the request layer said why) keeps the dialog open. */
  onSave: (name: string) => Promise<unknown>;
}

export function WorkflowNameModal({ request, onClose }: { request: NameRequest | null; onClose: () => void }) {
  const [form] = Form.useForm<{ name: string }>();
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    if (request) form.setFieldsValue({ name: request.initial });
  }, [request, form]);
  const submit = async () => {
    if (!request) return;
    const { name } = await form.validateFields();
    setSaving(true);
    try {
      await request.onSave(name.trim());
      onClose();
    } catch {
      // The request layer showed why; the name stays for another try.
    } finally {
      setSaving(false);
    }
  };
  return (
    <Modal
      title={request?.title}
      open={request !== null}
      okText={request?.okText}
      cancelText="取消"
      onOk={() => submit().catch(() => undefined)}
      onCancel={onClose}
      confirmLoading={saving}
      // The form is there before the first opening, so the name can be filled in as it opens.
      forceRender
    >
      <Flex vertical gap={12}>
        {request?.note}
        <Form form={form} layout="vertical" onFinish={() => void submit()} requiredMark={false}>
          <Form.Item
            name="name"
            label="工作流名称"
            rules={[
              { required: true, whitespace: true, message: '请输入工作流名称' },
              { max: 60, message: '工作流名称最多 60 个字符' },
            ]}
            style={{ marginBottom: 0 }}
          >
            <Input placeholder="例如：水彩风人像" maxLength={60} showCount autoFocus />
          </Form.Item>
        </Form>
      </Flex>
    </Modal>
  );
}
