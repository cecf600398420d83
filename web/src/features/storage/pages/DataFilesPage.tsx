import { useState } from 'react';
import {
  Alert,
  App,
  Breadcrumb,
  Button,
  Card,
  Flex,
  Form,
  Input,
  Modal,
  Popconfirm,
  Progress,
  Result,
  Space,
  Table,
  Typography,
  Upload,
  type TableColumnsType,
  type UploadFile,
} from 'antd';
import { DownloadOutlined, FileOutlined, FolderAddOutlined, FolderFilled, ReloadOutlined, UploadOutlined } from '@ant-design/icons';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { fileStoreNameSchema, type FileStoreEntry } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { FILESTORE_KEYS, fileStoreApi, fileStoreQueries } from '../api/filestore';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { formatTime } from '../../../components/orderViews';
import { formatBytes } from '../../../components/format';
import { session } from '../../../session/store';

const parentOf = (p: string) => p.slice(0, p.lastIndexOf('/')) || '/';

/** /console/gpudata/files — 文件存储: the account's files, the same at /root/shared in each of its instances. */
export default function DataFilesPage() {
  const [params, setParams] = useSearchParams();
  const path = params.get('path') || '/';
  const open = (p: string) => setParams(p === '/' ? {} : { path: p });
  const client = useQueryClient();
  const { message } = App.useApp();
  const listing = useQuery(fileStoreQueries.folder(path));
  const refresh = () => void client.invalidateQueries({ queryKey: FILESTORE_KEYS.all });
  const [uploads, setUploads] = useState<UploadFile[]>([]);
  const [naming, setNaming] = useState<{ mode: 'folder' } | { mode: 'rename'; entry: FileStoreEntry } | null>(null);

  if (listing.isError && isApiError(listing.error, 'FILESTORE_UNAVAILABLE')) {
    return (
      <PageFrame>
        <Card>
          <Result status="info" title="文件存储暂未开放" subTitle="文件存储挂载在本平台的实例中（/root/shared），当前服务器的实例由外部机群提供，暂不支持。" />
        </Card>
      </PageFrame>
    );
  }

  const segments = path === '/' ? [] : path.slice(1).split('/');
  const crumbs = [
    { title: <a onClick={() => open('/')}>全部文件</a> },
    ...segments.map((s, i) => {
      const to = `/${segments.slice(0, i + 1).join('/')}`;
      return { title: i === segments.length - 1 ? s : <a onClick={() => open(to)}>{s}</a> };
    }),
  ];
  const data = listing.data;
  const percent = data ? Math.min(100, Math.round((data.usedBytes / data.quotaBytes) * 100)) : 0;

  const columns: TableColumnsType<FileStoreEntry> = [
    {
      title: '名称',
      dataIndex: 'name',
      render: (_, e) =>
        e.dir ? (
          <a onClick={() => open(e.path)}>
            <Space>
              <FolderFilled style={{ color: '#faad14' }} />
              {e.name}
            </Space>
          </a>
        ) : (
          <Space>
            <FileOutlined />
            {e.name}
          </Space>
        ),
    },
    { title: '大小', dataIndex: 'size', width: 120, render: (_, e) => (e.dir ? '--' : formatBytes(e.size)) },
    { title: '修改时间', dataIndex: 'modifiedAt', width: 180, render: (v: string) => formatTime(v) },
    {
      title: '操作',
      key: 'actions',
      width: 200,
      render: (_, e) => (
        <Space size={4}>
          {!e.dir && (
            <Button type="link" size="small" icon={<DownloadOutlined />} href={fileStoreApi.downloadUrl(e.path)} download={e.name}>
              下载
            </Button>
          )}
          <Button type="link" size="small" onClick={() => setNaming({ mode: 'rename', entry: e })}>
            重命名
          </Button>
          <Popconfirm
            title={`删除${e.dir ? '文件夹' : '文件'}「${e.name}」？`}
            description={e.dir ? '文件夹里的所有文件都会被删除，实例中的 /root/shared 也会同步消失，且无法恢复。' : '删除后无法恢复，实例中也将看不到它。'}
            okText="删除"
            okButtonProps={{ danger: true }}
            cancelText="取消"
            onConfirm={() => fileStoreApi.remove(e.path).then(refresh)}
          >
            <Button type="link" size="small" danger>
              删除
            </Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  return (
    <PageFrame>
      <Card>
        <Flex vertical gap={16}>
          <Flex justify="space-between" align="center" wrap gap={12}>
            <Typography.Text type="secondary">
              文件存储挂载在你每台实例的 <Typography.Text code>/root/shared</Typography.Text>，在这里上传的文件在实例里立即可见，实例里写入的也会出现在这里。
            </Typography.Text>
            <Flex vertical gap={0} style={{ minWidth: 220 }}>
              <span data-testid="filestore-usage">
                已用 {data ? formatBytes(data.usedBytes) : '--'} / {data ? formatBytes(data.quotaBytes) : '--'}
              </span>
              <Progress percent={percent} size="small" showInfo={false} status={percent >= 90 ? 'exception' : 'normal'} />
            </Flex>
          </Flex>
          <Flex justify="space-between" align="center" wrap gap={12}>
            <Breadcrumb items={crumbs} />
            <Space>
              <Upload
                name="file"
                multiple
                action={fileStoreApi.uploadUrl(path)}
                headers={{ authorization: `Bearer ${session.getToken() ?? ''}` }}
                showUploadList={false}
                onChange={({ file, fileList }) => {
                  setUploads(fileList.filter((f) => f.status === 'uploading'));
                  if (file.status === 'done') {
                    void message.success(`「${file.name}」已上传`);
                    refresh();
                  } else if (file.status === 'error') {
                    const body = file.response as { message?: string; detail?: string } | undefined;
                    void message.error(`「${file.name}」上传失败：${body?.detail ?? body?.message ?? '网络错误，请重试'}`);
                  }
                }}
              >
                <Button type="primary" icon={<UploadOutlined />}>
                  上传文件
                </Button>
              </Upload>
              <Button icon={<FolderAddOutlined />} onClick={() => setNaming({ mode: 'folder' })}>
                新建文件夹
              </Button>
              <Button icon={<ReloadOutlined />} onClick={refresh} aria-label="刷新" />
            </Space>
          </Flex>
          {uploads.map((f) => (
            <Flex key={f.uid} align="center" gap={12} data-testid="upload-progress">
              <Typography.Text ellipsis style={{ width: 240 }}>
                正在上传 {f.name}
              </Typography.Text>
              <Progress percent={Math.round(f.percent ?? 0)} size="small" style={{ flex: 1, margin: 0 }} />
            </Flex>
          ))}
          {listing.isError ? (
            <LoadError
              error={listing.error}
              onRetry={() => (isApiError(listing.error) && listing.error.status === 404 ? open(parentOf(path)) : void listing.refetch())}
            />
          ) : (
            <>
              {data?.truncated && (
                <Alert
                  type="warning"
                  showIcon
                  message={`这个文件夹的项目太多，这里只列出前 ${data.entries.length} 项`}
                  description="其余文件仍在，可在实例的终端中进入 /root/shared 查看或整理（例如分到几个子文件夹）。"
                />
              )}
              <Table<FileStoreEntry>
                rowKey="path"
                size="middle"
                loading={listing.isPending}
                columns={columns}
                dataSource={data?.entries ?? []}
                pagination={data && data.entries.length > 50 ? { pageSize: 50, showSizeChanger: false } : false}
                locale={{ emptyText: path === '/' ? '还没有文件：点击「上传文件」，或在实例中写入 /root/shared' : '这个文件夹是空的' }}
              />
            </>
          )}
        </Flex>
      </Card>
      <NameDialog
        state={naming}
        onClose={() => setNaming(null)}
        onSubmit={async (name) => {
          if (naming?.mode === 'folder') await fileStoreApi.makeFolder(path, name);
          else if (naming?.mode === 'rename') await fileStoreApi.rename(naming.entry.path, name);
          setNaming(null);
          refresh();
        }}
      />
    </PageFrame>
  );
}

function NameDialog({
  state,
  onClose,
  onSubmit,
}: {
  state: { mode: 'folder' } | { mode: 'rename'; entry: FileStoreEntry } | null;
  onClose: () => void;
  onSubmit: (name: string) => Promise<void>;
}) {
  const [form] = Form.useForm<{ name: string }>();
  const [busy, setBusy] = useState(false);
  const title = state?.mode === 'rename' ? `重命名「${state.entry.name}」` : '新建文件夹';
  return (
    <Modal
      title={title}
      open={state !== null}
      onCancel={onClose}
      okText="确定"
      cancelText="取消"
      confirmLoading={busy}
      destroyOnHidden
      afterOpenChange={(opened) => opened && form.setFieldsValue({ name: state?.mode === 'rename' ? state.entry.name : '' })}
      onOk={() =>
        form.validateFields().then(async ({ name }) => {
          setBusy(true);
          try {
            await onSubmit(name.trim());
          } finally {
            setBusy(false);
          }
        })
      }
    >
      <Form form={form} layout="vertical" preserve={false}>
        <Form.Item
          name="name"
          label="名称"
          rules={[
            {
              validator: (_, v: string) => {
                const r = fileStoreNameSchema.safeParse(v ?? '');
                return r.success ? Promise.resolve() : Promise.reject(new Error(r.error.issues[0]!.message));
              },
            },
          ]}
        >
          <Input autoFocus maxLength={255} placeholder="文件夹或文件的名称" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
