import { useState } from 'react';
import { Alert, Button, Empty, Flex, Form, Input, Modal, Popconfirm, Table, Tooltip, Typography, type TableColumnsType } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatMinute } from '../../../lib/time';
import { ERRORS, SSH_KEYS_PER_USER, type ErrorName, type SshKey, type SshKeyCreate } from '@console/contract';
import { ACCOUNT_KEYS, sshKeyApi, accountQueries } from '../api/account';
import { reactToError } from '../../../api/client';
import { isApiError } from '../../../api/errors';
import { getApiUi } from '../../../api/ui';
import { LoadError } from '../../../components/LoadError';

const NAME_MAX = 50;
/** As the server takes it (sshKeyCreateSchema); a real key is far shorter. */
const KEY_MAX = 16_384;
/** Refusals of the key itself: shown under the 公钥 field, the dialog staying open to fix it. */
const KEY_ERRORS: ErrorName[] = ['SSH_KEY_INVALID', 'SSH_KEY_DUPLICATE'];
/** Cells that must stay on one line (times, the action). */
const NOWRAP = { whiteSpace: 'nowrap' } as const;

/**
 * SSH 公钥 (账号中心): keys that log into the SSH gateway of every instance the user may manage,
 * without the instance's password (the 公钥登录 command of an instance's 登录信息).
 */
export function SshKeysTab() {
  const queryClient = useQueryClient();
  const [adding, setAdding] = useState(false);
  const keys = useQuery(accountQueries.sshKeys());
  const refresh = () => queryClient.invalidateQueries({ queryKey: ACCOUNT_KEYS.sshKeys });
  const remove = useMutation({ mutationFn: (k: SshKey) => sshKeyApi.remove(k.id), onSettled: refresh });

  if (keys.isError) return <LoadError error={keys.error} onRetry={() => void keys.refetch()} />;
  const items = keys.data?.items ?? [];
  const full = items.length >= SSH_KEYS_PER_USER;
  const addButton = (
    <Tooltip title={full ? ERRORS.SSH_KEY_LIMIT.message : undefined}>
      <Button type="primary" icon={<PlusOutlined />} disabled={full} onClick={() => setAdding(true)}>
        添加公钥
      </Button>
    </Tooltip>
  );
  const columns: TableColumnsType<SshKey> = [
    { title: '名称', dataIndex: 'name', render: (name: string) => <Typography.Text strong>{name}</Typography.Text> },
    { title: '类型', dataIndex: 'algorithm', onCell: () => ({ style: NOWRAP }), render: (a: string) => <span className="mono">{a}</span> },
    {
      title: '指纹',
      dataIndex: 'fingerprint',
      render: (f: string) => (
        <Typography.Text className="mono" style={{ fontSize: 12, wordBreak: 'break-all' }} copyable={{ text: f, tooltips: ['复制指纹', '已复制'] }}>
          {f}
        </Typography.Text>
      ),
    },
    { title: '添加时间', dataIndex: 'createdAt', onCell: () => ({ style: NOWRAP }), render: formatMinute },
    { title: '最近使用', dataIndex: 'lastUsedAt', onCell: () => ({ style: NOWRAP }), render: (t: string | null) => (t ? formatMinute(t) : '—') },
    {
      title: '操作',
      key: 'actions',
      onCell: () => ({ style: NOWRAP }),
      render: (_, k) => (
        <Popconfirm
          title={`删除公钥「${k.name}」？`}
          description="删除后不能再用这个公钥登录实例，正在使用它的 SSH 连接也会断开。"
          okButtonProps={{ danger: true }}
          okText="删除"
          onConfirm={() => remove.mutate(k)}
        >
          <a style={{ color: '#ff4d4f' }}>删除</a>
        </Popconfirm>
      ),
    },
  ];
  return (
    <Flex vertical gap={16}>
      <Alert
        type="info"
        showIcon
        title="添加后，可用实例「登录信息」中的公钥登录命令免密登录你有权管理的实例"
        description={`每个账号最多添加 ${SSH_KEYS_PER_USER} 个公钥；删除公钥后，用它登录的会话随即失效。`}
      />
      {keys.isSuccess && items.length === 0 ? (
        <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有公钥">
          {addButton}
        </Empty>
      ) : (
        <>
          <Flex justify="space-between" align="center">
            <Typography.Text type="secondary">{keys.isSuccess && `已添加 ${items.length} / ${SSH_KEYS_PER_USER} 个`}</Typography.Text>
            {addButton}
          </Flex>
          <Table<SshKey> rowKey="id" columns={columns} dataSource={items} loading={keys.isPending || remove.isPending} pagination={false} tableLayout="auto" />
        </>
      )}
      {adding && <AddKeyModal onClose={() => setAdding(false)} onAdded={refresh} />}
    </Flex>
  );
}

function AddKeyModal({ onClose, onAdded }: { onClose: () => void; onAdded: () => void }) {
  const [form] = Form.useForm<SshKeyCreate>();
  const add = useMutation({
    mutationFn: (body: SshKeyCreate) => sshKeyApi.add(body),
    onSuccess: () => {
      onAdded();
      onClose();
    },
    onError: (e) => {
      if (isApiError(e, ...KEY_ERRORS)) {
        form.setFields([{ name: 'publicKey', errors: [e.detail ? `${e.message}：${e.detail}` : e.message] }]);
        return;
      }
      if (isApiError(e)) reactToError(e, getApiUi());
      // Another tab may have added keys meanwhile: the list shows how many there are now.
      if (isApiError(e, 'SSH_KEY_LIMIT')) onAdded();
    },
  });
  const submit = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return; // the form shows what is missing
    add.mutate({ name: v.name.trim(), publicKey: v.publicKey.trim() });
  };
  return (
    <Modal open title="添加公钥" okText="添加" cancelText="取消" onOk={() => void submit()} onCancel={onClose} confirmLoading={add.isPending} destroyOnHidden>
      <Form form={form} layout="vertical" requiredMark={false}>
        <Form.Item
          name="name"
          label="名称"
          rules={[
            { required: true, whitespace: true, message: '请填写名称' },
            { max: NAME_MAX, message: `名称最多 ${NAME_MAX} 个字符` },
          ]}
        >
          <Input maxLength={NAME_MAX} showCount placeholder="如：办公室笔记本" autoFocus />
        </Form.Item>
        <Form.Item
          name="publicKey"
          label="公钥"
          rules={[
            { required: true, whitespace: true, message: '请粘贴公钥' },
            { max: KEY_MAX, message: '公钥过长' },
          ]}
          extra="粘贴 ~/.ssh/id_ed25519.pub 的内容；没有密钥时用 ssh-keygen -t ed25519 生成"
        >
          <Input.TextArea className="mono" rows={4} placeholder="ssh-ed25519 AAAA... user@host" spellCheck={false} autoComplete="off" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
