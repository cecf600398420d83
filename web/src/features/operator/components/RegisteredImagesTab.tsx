/**
 * 「镜像登记」 of the operator area (issue 30 §1): images from the operator's registry (a CUDA
 * PyTorch, an SD WebUI, a ComfyUI image) registered by reference — the server checks the manifest
 * exists before it records one — then offered in the catalogue like the stock images; removed
 * after a confirmation, refused while an instance uses it.
 */
import { useState } from 'react';
import {
  Alert,
  Button,
  Card,
  Checkbox,
  Empty,
  Flex,
  Form,
  Input,
  InputNumber,
  Popconfirm,
  Radio,
  Space,
  Table,
  Tag,
  Tooltip,
  Typography,
  type TableColumnsType,
} from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  OPERATOR_IMAGE_CATEGORIES,
  OPERATOR_IMAGE_KIND_LABELS,
  OPERATOR_IMAGE_KINDS,
  operatorImageCategoryLabel,
  operatorImageRegisterSchema,
  type OperatorImage,
  type OperatorImageKind,
  type OperatorImageRegister,
} from '@console/contract';
import { LoadError } from '../../../components/LoadError';
import { RefreshButton } from '../../../components/PagedTable';
import { formatMinute } from '../../../lib/time';
import { REGISTERED_IMAGE_KEYS, registeredImageQueries, registeredImagesApi } from '../api/registeredImages';

interface FormValues {
  reference: string;
  name: string;
  kind: OperatorImageKind;
  categories: OperatorImageRegister['categories'];
  port: number | null;
  minGpuMemoryGb: number;
  command: string;
  description: string;
}

const INITIAL: Partial<FormValues> = { kind: 'system', categories: ['Gpu'], port: null, minGpuMemoryGb: 0, command: '', description: '' };

/** The schema's message for a field, so the form says what the server would. */
function fieldError(values: FormValues, field: keyof FormValues): string | undefined {
  const parsed = operatorImageRegisterSchema.safeParse({ ...values, port: values.port ?? null });
  if (parsed.success) return undefined;
  return parsed.error.issues.find((i) => i.path[0] === field)?.message;
}

function RegisterForm({ registry, onDone }: { registry: string | null; onDone: () => void }) {
  const [form] = Form.useForm<FormValues>();
  const kind = Form.useWatch('kind', form) ?? 'system';
  const queryClient = useQueryClient();
  const register = useMutation({
    mutationFn: (v: FormValues) => registeredImagesApi.register({ ...v, port: v.kind === 'application' ? v.port : null }),
    onSuccess: async () => {
      form.resetFields();
      await queryClient.invalidateQueries({ queryKey: REGISTERED_IMAGE_KEYS.all });
      onDone();
    },
  });
  const check = (field: keyof FormValues) => ({
    validator: async () => {
      const message = fieldError(form.getFieldsValue(true) as FormValues, field);
      if (message) throw new Error(message);
    },
  });
  return (
    <Card size="small" title="登记镜像" style={{ marginBottom: 16 }}>
      <Form<FormValues>
        form={form}
        layout="vertical"
        initialValues={INITIAL}
        requiredMark={false}
        onFinish={(v) => register.mutate(v)}
        style={{ maxWidth: 640 }}
      >
        <Form.Item
          name="reference"
          label="镜像地址"
          extra={
            registry ? `在镜像仓库 ${registry} 中检查该镜像；可只填写仓库内的名称，如 ai/sd-webui:1.9` : '未配置 REGISTRY_URL：只能登记本机镜像目录中已有的镜像'
          }
          rules={[{ required: true, whitespace: true, message: '请填写镜像地址' }, check('reference')]}
        >
          <Input placeholder="registry.example.com/ai/pytorch:2.3-cuda12.1 或 …@sha256:摘要" className="mono" maxLength={255} />
        </Form.Item>
        <Form.Item name="name" label="显示名称" rules={[{ required: true, whitespace: true, message: '请填写显示名称' }, check('name')]}>
          <Input placeholder="如 PyTorch 2.3（CUDA 12.1）" maxLength={60} />
        </Form.Item>
        <Form.Item name="kind" label="镜像类型">
          <Radio.Group optionType="button" options={OPERATOR_IMAGE_KINDS.map((k) => ({ value: k, label: OPERATOR_IMAGE_KIND_LABELS[k] }))} />
        </Form.Item>
        {kind === 'application' ? (
          <>
            <Form.Item name="port" label="服务端口" rules={[{ required: true, message: '镜像应用须填写服务端口' }]}>
              <InputNumber min={1} max={65535} precision={0} placeholder="7860" style={{ width: 160 }} />
            </Form.Item>
            <Form.Item name="minGpuMemoryGb" label="显存要求（GB）" extra="0 表示无需显卡，也在 CPU 规格上销售" rules={[check('minGpuMemoryGb')]}>
              <InputNumber min={0} max={640} precision={0} style={{ width: 160 }} />
            </Form.Item>
            <Form.Item name="command" label="启动命令" extra="留空则使用镜像自带的启动命令（Cmd）" rules={[check('command')]}>
              <Input placeholder="python3 launch.py --listen --port 7860" className="mono" />
            </Form.Item>
          </>
        ) : (
          <Form.Item name="categories" label="适用的产品" rules={[check('categories')]}>
            <Checkbox.Group
              options={OPERATOR_IMAGE_CATEGORIES.map((c) => ({ value: c, label: operatorImageCategoryLabel(c), disabled: kind === 'desktop' && c === 'Gpu' }))}
            />
          </Form.Item>
        )}
        <Form.Item name="description" label="说明（选填）" rules={[check('description')]}>
          <Input.TextArea rows={2} maxLength={300} showCount />
        </Form.Item>
        <Space>
          <Button type="primary" htmlType="submit" loading={register.isPending}>
            {register.isPending ? '正在检查镜像…' : '检查并登记'}
          </Button>
          <Button onClick={onDone} disabled={register.isPending}>
            取消
          </Button>
        </Space>
      </Form>
    </Card>
  );
}

export function RegisteredImagesTab() {
  const queryClient = useQueryClient();
  const list = useQuery({
    ...registeredImageQueries.all(),
    // A pull from the registry runs after the answer: look again until every image is on this host.
    refetchInterval: (q) => (q.state.data?.items.some((i) => !i.ready && !i.problem) ? 10_000 : false),
  });
  const [adding, setAdding] = useState(false);
  const remove = useMutation({
    mutationFn: (image: OperatorImage) => registeredImagesApi.remove(image),
    onSettled: () => queryClient.invalidateQueries({ queryKey: REGISTERED_IMAGE_KEYS.all }),
  });

  if (list.isError) return <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  const data = list.data;
  const columns: TableColumnsType<OperatorImage> = [
    {
      title: '名称',
      key: 'name',
      width: 240,
      render: (_, i) => (
        <Flex vertical>
          <Typography.Text strong>{i.name}</Typography.Text>
          <Typography.Text type="secondary" className="mono" style={{ fontSize: 12 }} copyable={{ text: i.reference }}>
            {i.reference}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '类型', key: 'kind', width: 100, render: (_, i) => OPERATOR_IMAGE_KIND_LABELS[i.kind] },
    {
      title: '适用 / 端口',
      key: 'use',
      width: 200,
      render: (_, i) =>
        i.kind === 'application' ? (
          <Space direction="vertical" size={0}>
            <span>
              端口 {i.port} · {i.minGpuMemoryGb ? `显存 ≥ ${i.minGpuMemoryGb} GB` : '无需显卡'}
            </span>
            {i.command ? (
              <Typography.Text type="secondary" className="mono" style={{ fontSize: 12 }} ellipsis={{ tooltip: i.command }}>
                {i.command}
              </Typography.Text>
            ) : null}
          </Space>
        ) : (
          <Space size={[4, 4]} wrap>
            {i.categories.map((c) => (
              <Tag key={c}>{operatorImageCategoryLabel(c as (typeof OPERATOR_IMAGE_CATEGORIES)[number])}</Tag>
            ))}
          </Space>
        ),
    },
    {
      title: '状态',
      key: 'ready',
      width: 120,
      render: (_, i) =>
        i.ready ? (
          <Tag color="success">本机可用</Tag>
        ) : i.problem ? (
          <Tooltip title={`${i.problem}；一分钟后刷新列表会再试，或移除后重新登记`}>
            <Tag color="error">拉取失败</Tag>
          </Tooltip>
        ) : (
          <Tooltip title="正在从镜像仓库拉取到本机；失败时见服务器日志，可移除后重新登记">
            <Tag color="processing">拉取中</Tag>
          </Tooltip>
        ),
    },
    { title: '在用实例', dataIndex: 'inUse', width: 90 },
    { title: '登记时间', key: 'createdAt', width: 150, render: (_, i) => formatMinute(i.createdAt) },
    {
      title: '操作',
      key: 'actions',
      width: 90,
      fixed: 'right',
      render: (_, i) => (
        <Popconfirm
          title={`移除「${i.name}」？`}
          description={i.inUse ? `有 ${i.inUse} 台实例在用，需待其释放后才能移除` : '移除后市场中不再提供该镜像，已有实例不受影响'}
          okText="移除"
          okButtonProps={{ danger: true, disabled: i.inUse > 0 }}
          cancelText="取消"
          onConfirm={() => remove.mutateAsync(i)}
        >
          <Button type="link" danger size="small" loading={remove.isPending && remove.variables?.id === i.id}>
            移除
          </Button>
        </Popconfirm>
      ),
    },
  ];

  return (
    <>
      <Flex justify="space-between" align="center" style={{ marginBottom: 12 }} gap={8} wrap>
        <Typography.Text type="secondary">
          {data?.registry ? `镜像仓库：${data.registry}` : '未配置 REGISTRY_URL：登记本机镜像目录中的镜像（npm run images 构建的，或用 skopeo 导入的）'}
        </Typography.Text>
        <Space>
          <RefreshButton list={list} />
          <Button type="primary" icon={<PlusOutlined />} onClick={() => setAdding(true)} disabled={adding}>
            登记镜像
          </Button>
        </Space>
      </Flex>
      {adding ? <RegisterForm registry={data?.registry ?? null} onDone={() => setAdding(false)} /> : null}
      {data && data.items.some((i) => !i.ready && !i.problem) ? (
        <Alert type="info" showIcon style={{ marginBottom: 12 }} message="拉取完成前，市场中该镜像显示为不可用" />
      ) : null}
      <Table<OperatorImage>
        rowKey="id"
        tableLayout="fixed"
        loading={list.isPending}
        dataSource={data?.items ?? []}
        columns={columns}
        pagination={false}
        scroll={{ x: columns.reduce((sum, c) => sum + Number(c.width), 0) }}
        locale={{
          emptyText: <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="尚未登记镜像：登记 SD WebUI、ComfyUI 等镜像后，市场才会提供对应的镜像应用" />,
        }}
      />
    </>
  );
}
