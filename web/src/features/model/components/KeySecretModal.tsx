import { Alert, App, Button, Flex, Input, Modal, Space, Typography } from 'antd';
import { CopyOutlined } from '@ant-design/icons';
import type { ApiKeyCreated } from '@console/contract';

/** Puts text on the clipboard, saying whether it worked (and what to do when it did not). */
export function useCopy() {
  const { message } = App.useApp();
  return (text: string, what: string) => {
    const fail = () => void message.warning(`复制失败，请手动选中${what}复制`);
    if (!navigator.clipboard) return fail();
    navigator.clipboard.writeText(text).then(() => void message.success(`${what}已复制`), fail);
  };
}

/**
 * The full secret of a key just made: shown this once (the server keeps only its hash), so the
 * dialog closes only through 「我已保存」.
 */
export function KeySecretModal({ created, onClose }: { created: ApiKeyCreated; onClose: () => void }) {
  const copy = useCopy();
  return (
    <Modal
      open
      title={`密钥「${created.name}」已创建`}
      closable={false}
      mask={{ closable: false }}
      keyboard={false}
      footer={
        <Button type="primary" onClick={onClose}>
          我已保存，关闭
        </Button>
      }
    >
      <Flex vertical gap={16}>
        <Alert
          type="warning"
          showIcon
          title="密钥只显示这一次，请立即复制保存"
          description="关闭后将无法再次查看完整密钥；遗失后只能删除它并新建一个。请勿把密钥写进前端代码或公开的仓库。"
        />
        <Space.Compact style={{ width: '100%' }}>
          <Input readOnly aria-label="完整密钥" value={created.secret} onFocus={(e) => e.target.select()} style={{ fontFamily: 'monospace' }} />
          <Button type="primary" icon={<CopyOutlined />} onClick={() => copy(created.secret, '密钥')}>
            复制
          </Button>
        </Space.Compact>
        <Typography.Text type="secondary">
          调用时在请求头中携带 <Typography.Text code>Authorization: Bearer 完整密钥</Typography.Text>，用法见页面下方的调用示例。
        </Typography.Text>
      </Flex>
    </Modal>
  );
}
