import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Alert, App, Button, Card, Flex, Progress, Space, Typography, Upload, type UploadProps } from 'antd';
import { FileZipOutlined, InboxOutlined } from '@ant-design/icons';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearchParams } from 'react-router';
import { DATASET_IMAGE_EXTENSIONS, DATASET_MAX_IMAGES, PAGE, type DatasetUploadResult } from '@console/contract';
import { DATASET_KEYS, datasetApi, datasetQueries } from '../api/datasets';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { session } from '../../../session/store';
import { datasetDetailPath } from '../utils/paths';

/** Uploads at once: a few, so that 500 images do not open 500 connections. */
const PARALLEL = 3;

interface Outcome {
  name: string;
  ok: boolean;
  message?: string;
}

/** Runs at most `n` tasks at a time, in the order they were given. */
/** `fn` called once calls have paused for `ms`. */
function useDebounced(fn: () => void, ms: number): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), ms);
  }, [ms]);
}

function useLimiter(n: number) {
  const running = useRef(0);
  const waiting = useRef<(() => void)[]>([]);
  return useMemo(
    () => ({
      async run<T>(task: () => Promise<T>): Promise<T> {
        if (running.current >= n) await new Promise<void>((resolve) => waiting.current.push(resolve));
        running.current++;
        try {
          return await task();
        } finally {
          running.current--;
          waiting.current.shift()?.();
        }
      },
    }),
    [n],
  );
}

/** POSTs one file as multipart `file` with progress; resolves with the server's answer. */
function send(url: string, file: File, onProgress: (percent: number) => void): Promise<DatasetUploadResult> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('authorization', `Bearer ${session.getToken() ?? ''}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress((e.loaded / e.total) * 100);
    xhr.onerror = () => reject(new Error('网络错误，请检查网络后重试'));
    xhr.onload = () => {
      let body: (DatasetUploadResult & { message?: string; detail?: string }) | undefined;
      try {
        body = JSON.parse(xhr.responseText) as typeof body;
      } catch {
        body = undefined;
      }
      if (xhr.status === 200 && body) resolve(body);
      else reject(new Error(body?.detail ?? body?.message ?? `上传失败（${xhr.status}）`));
    };
    const form = new FormData();
    form.append('file', file);
    xhr.send(form);
  });
}

/**
 * /sd/dataset/detail/upload?id= — images into a dataset: drop or pick many at once (three upload at
 * a time, each with its progress), or import a zip of images with same-name .txt captions; each file
 * is taken or refused on its own, and the refusals say why.
 */
export default function DatasetUploadPage() {
  const [params] = useSearchParams();
  const id = params.get('id') ?? '';
  const navigate = useNavigate();
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const limiter = useLimiter(PARALLEL);
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  const dataset = useQuery({ ...datasetQueries.one(id), enabled: !!id });

  // Lists refreshed once the uploads pause, not once per file (500 files, 500 refetches).
  const refreshSoon = useDebounced(() => void queryClient.invalidateQueries({ queryKey: DATASET_KEYS.all }), 800);
  const record = (result: DatasetUploadResult) => {
    setOutcomes((o) => [
      ...o,
      ...result.added.map((i) => ({ name: i.name, ok: true })),
      ...result.refused.map((r) => ({ name: r.name, ok: false, message: r.message })),
    ]);
    refreshSoon();
  };
  // Files beyond the room left are not sent at all (each would be refused, after its whole upload).
  // Counted from the images there were when the page opened, plus those picked here since (less the refused).
  const picked = useRef(0);
  const atOpen = useRef<number | null>(null);
  if (dataset.data && atOpen.current === null) atOpen.current = dataset.data.imageCount;
  const beforeUpload: UploadProps['beforeUpload'] = () => {
    const room = DATASET_MAX_IMAGES - (atOpen.current ?? 0) - picked.current + outcomes.filter((o) => !o.ok).length;
    if (room <= 0) {
      void message.warning(`数据集最多 ${DATASET_MAX_IMAGES} 张图片，多出的图片未上传`, 5);
      return Upload.LIST_IGNORE;
    }
    picked.current++;
    return true;
  };
  const request =
    (url: string): UploadProps['customRequest'] =>
    ({ file, onProgress, onSuccess, onError }) =>
      void limiter
        .run(() => send(url, file as File, (percent) => onProgress?.({ percent })))
        .then((result) => {
          record(result);
          if (result.refused.length && !result.added.length) onError?.(new Error(result.refused[0]!.message));
          else onSuccess?.(result);
        })
        .catch((e: Error) => {
          setOutcomes((o) => [...o, { name: (file as File).name, ok: false, message: e.message }]);
          onError?.(e);
        });

  if (!id || dataset.isError)
    return <PageFrame>{<LoadError error={dataset.error ?? new Error('缺少数据集 ID')} onRetry={() => navigate(PAGE.sdDataset)} />}</PageFrame>;
  const d = dataset.data;
  const added = outcomes.filter((o) => o.ok).length;
  const refused = outcomes.filter((o) => !o.ok);

  return (
    <PageFrame
      title={d ? `上传图片 · ${d.name}` : '上传图片'}
      extra={
        <Button type="primary" onClick={() => navigate(datasetDetailPath(id))}>
          完成，去标注
        </Button>
      }
    >
      <Flex vertical gap={16}>
        <Alert
          type="info"
          showIcon
          title={d ? `已有 ${d.imageCount} / ${DATASET_MAX_IMAGES} 张图片` : '正在读取数据集…'}
          description="支持 png、jpg、webp、bmp，单张不超过 20MB，按文件内容识别格式；同名图片会被拒绝（标注以同名 .txt 对应图片）。"
        />
        <Card title="上传图片" data-testid="dataset-upload">
          <Upload.Dragger
            multiple
            accept={DATASET_IMAGE_EXTENSIONS.join(',')}
            customRequest={request(datasetApi.uploadUrl(id))}
            beforeUpload={beforeUpload}
            disabled={!d}
            listType="text"
          >
            <p className="ant-upload-drag-icon">
              <InboxOutlined />
            </p>
            <p className="ant-upload-text">点击或拖拽图片到这里上传，可一次选择多张</p>
          </Upload.Dragger>
        </Card>
        <Card title="导入压缩包">
          <Space direction="vertical">
            <Typography.Text type="secondary">zip 压缩包（不超过 200MB）：其中的图片连同同名 .txt 标注一起导入，文件夹结构不限。</Typography.Text>
            <Upload accept=".zip" customRequest={request(datasetApi.importUrl(id))} disabled={!d} showUploadList={{ showRemoveIcon: false }}>
              <Button icon={<FileZipOutlined />}>选择 zip 文件</Button>
            </Upload>
          </Space>
        </Card>
        {outcomes.length > 0 && (
          <Card title="本次上传" data-testid="upload-summary">
            <Flex vertical gap={8}>
              <Progress
                percent={Math.round((added / outcomes.length) * 100)}
                success={{ percent: Math.round((added / outcomes.length) * 100) }}
                showInfo={false}
              />
              <Typography.Text>
                成功 {added} 张{refused.length > 0 && <Typography.Text type="danger">，未上传 {refused.length} 个</Typography.Text>}
              </Typography.Text>
              {refused.map((o, i) => (
                <Typography.Text key={`${o.name}-${i}`} type="danger">
                  「{o.name}」：{o.message}
                </Typography.Text>
              ))}
            </Flex>
          </Card>
        )}
      </Flex>
    </PageFrame>
  );
}
