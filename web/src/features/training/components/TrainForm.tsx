/** 新建训练任务: a dataset, a base model, the parameters (preset by the dataset's type), a live quote, then the confirmation. */
import { useState } from 'react';
import { Alert, Button, Card, Col, Collapse, Empty, Flex, Form, Input, Row, Select, Skeleton, Typography } from 'antd';
import { PlayCircleOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import {
  DATASET_KIND_LABELS,
  DATASET_MAX_PER_ACCOUNT,
  LORA_MAX_ACTIVE_JOBS,
  loraOutputNameSchema,
  loraPreset,
  PAGE,
  SD_BASE_MODELS,
  type Dataset,
  type LoraJob,
  type SdBaseModelId,
} from '@console/contract';
import { datasetDetailPath, datasetUploadPath, datasetQueries } from '../../datasets';
import type { LoraQuoteRequest } from '../api/training';
import { LoadError } from '../../../components/LoadError';
import { ADVANCED_KEYS, AdvancedParamFields, BasicParamFields, validateParams, type ParamsDraft } from './TrainParamFields';
import { pendingStart, QuotePanel, StartModal, useTrainQuote, type PendingStart } from './TrainQuote';
import { baseModelName } from './trainViews';

const DEFAULT_BASE: SdBaseModelId = 'sd15';

/** The LoRA's file name from the dataset: its trigger word, else its name in the letters a file name may have. */
export function defaultLoraName(d: Pick<Dataset, 'name' | 'triggerWord'>): string {
  const from = (d.triggerWord || d.name)
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  return from || 'my_lora';
}

interface Draft {
  datasetId: string | null;
  baseModel: SdBaseModelId;
  name: string;
  params: ParamsDraft;
}

/** The form's state and what it derives: the chosen dataset, the checked params, the quote request. */
function useTrainDraft(datasets: Dataset[]) {
  const [draft, setDraft] = useState<Draft>({ datasetId: null, baseModel: DEFAULT_BASE, name: '', params: loraPreset('person', DEFAULT_BASE) });
  const dataset = datasets.find((d) => d.id === draft.datasetId) ?? null;
  const checked = validateParams(draft.params);
  const nameCheck = loraOutputNameSchema.safeParse(draft.name);
  const nameError = dataset && !nameCheck.success ? (nameCheck.error.issues[0]?.message ?? '模型名称不正确') : null;
  const request: LoraQuoteRequest | null =
    dataset && dataset.imageCount > 0 && checked.params ? { datasetId: dataset.id, baseModel: draft.baseModel, params: checked.params } : null;

  // A new dataset or base model starts again from the preset of its type; the name follows the dataset.
  const chooseDataset = (id: string) => {
    const d = datasets.find((x) => x.id === id);
    if (d) setDraft((s) => ({ ...s, datasetId: id, name: defaultLoraName(d), params: loraPreset(d.kind, s.baseModel) }));
  };
  const chooseBase = (baseModel: SdBaseModelId) =>
    setDraft((s) => ({ ...s, baseModel, params: loraPreset(datasets.find((x) => x.id === s.datasetId)?.kind ?? 'person', baseModel) }));
  const setParams = (patch: Partial<ParamsDraft>) => setDraft((s) => ({ ...s, params: { ...s.params, ...patch } }));
  const setName = (name: string) => setDraft((s) => ({ ...s, name }));
  const resetPreset = () => dataset && setParams(loraPreset(dataset.kind, draft.baseModel));
  return { draft, dataset, checked, nameError, request, chooseDataset, chooseBase, setParams, setName, resetPreset };
}

/** Why no quote is asked for yet, in the words of what to do next. */
function quoteBlocker(dataset: Dataset | null, paramsOk: boolean, firstError: string | undefined): string | null {
  if (!dataset) return '选择数据集后显示训练步数和费用';
  if (dataset.imageCount === 0) return '数据集中还没有图片，上传图片后才能训练';
  if (!paramsOk) return `参数有误，修正后显示费用：${firstError ?? ''}`;
  return null;
}

function NoDatasets() {
  return (
    <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="还没有数据集：训练 LoRA 需要先创建数据集，上传图片并标注">
      <Link to={PAGE.sdDatasetCreate}>
        <Button type="primary">创建数据集</Button>
      </Link>
    </Empty>
  );
}

/** The chosen dataset's problems: none to learn from, or images without a caption. */
function DatasetWarnings({ dataset }: { dataset: Dataset }) {
  if (dataset.imageCount === 0)
    return (
      <Alert
        type="warning"
        showIcon
        title="该数据集还没有图片，无法训练"
        action={<Link to={datasetUploadPath(dataset.id)}>上传图片</Link>}
        style={{ marginBottom: 16 }}
      />
    );
  if (dataset.uncaptioned === 0) return null;
  return (
    <Alert
      type="warning"
      showIcon
      title={`有 ${dataset.uncaptioned} 张图片还没有标注`}
      description="未标注的图片训练时没有描述，只能学到触发词，效果通常较差；建议先补全标注。"
      action={<Link to={datasetDetailPath(dataset.id)}>去标注</Link>}
      style={{ marginBottom: 16 }}
    />
  );
}

function datasetOptions(datasets: Dataset[]) {
  return datasets.map((d) => ({ value: d.id, label: `${d.name} · ${d.imageCount} 张` }));
}

/** The datasets to train on: one page holds them all (an account has at most DATASET_MAX_PER_ACCOUNT). */
function useAllDatasets() {
  return useQuery(datasetQueries.list(1, DATASET_MAX_PER_ACCOUNT));
}

export function TrainForm({ onStarted }: { onStarted: (job: LoraJob) => void }) {
  const datasets = useAllDatasets();
  return (
    <Card title="新建训练任务">
      {datasets.isError ? (
        <LoadError error={datasets.error} onRetry={() => void datasets.refetch()} />
      ) : datasets.isPending ? (
        <Skeleton active />
      ) : datasets.data.items.length === 0 ? (
        <NoDatasets />
      ) : (
        <TrainFormBody datasets={datasets.data.items} onStarted={onStarted} />
      )}
    </Card>
  );
}

function TrainFormBody({ datasets, onStarted }: { datasets: Dataset[]; onStarted: (job: LoraJob) => void }) {
  const form = useTrainDraft(datasets);
  const { draft, dataset, checked } = form;
  const { query: quote, settling } = useTrainQuote(form.request);
  const [pending, setPending] = useState<PendingStart | null>(null);
  const firstError = Object.values(checked.errors)[0];
  const blocked = quoteBlocker(dataset, !!checked.params, firstError);
  const canStart = !!form.request && !form.nameError && !!quote.data && !quote.isError && !settling;
  const advancedErrors = ADVANCED_KEYS.filter((k) => checked.errors[k]).length;

  const open = () => form.request && quote.data && dataset && setPending(pendingStart(form.request, draft.name, quote.data, dataset.name));
  const renew = () => setPending((p) => p && { ...p, body: { ...p.body, requestId: crypto.randomUUID() } });

  return (
    <Row gutter={24}>
      <Col xs={24} xl={17}>
        <Form layout="vertical" requiredMark={false} component="div">
          <Row gutter={16}>
            <Col xs={24} md={12}>
              <Form.Item label="数据集" htmlFor="lora-dataset" extra={<Link to={PAGE.sdDataset}>管理数据集</Link>}>
                <Select
                  id="lora-dataset"
                  placeholder="选择要训练的数据集"
                  value={draft.datasetId ?? undefined}
                  onChange={form.chooseDataset}
                  options={datasetOptions(datasets)}
                  showSearch={{ optionFilterProp: 'label' }}
                />
              </Form.Item>
            </Col>
            <Col xs={24} md={12}>
              <Form.Item label="底模" htmlFor="lora-base">
                <Select
                  id="lora-base"
                  value={draft.baseModel}
                  onChange={form.chooseBase}
                  options={SD_BASE_MODELS.map((m) => ({ value: m.id, label: m.name }))}
                />
              </Form.Item>
            </Col>
          </Row>
          {dataset && <DatasetWarnings dataset={dataset} />}
          <Row gutter={16}>
            <Col xs={24} md={12}>
              <Form.Item
                label="模型名称"
                htmlFor="lora-name"
                validateStatus={form.nameError ? 'error' : undefined}
                help={form.nameError}
                extra="输出的 LoRA 文件名，只能用英文字母、数字、下划线和短横线"
              >
                <Input id="lora-name" value={draft.name} onChange={(e) => form.setName(e.target.value)} maxLength={40} placeholder="例如：mychar" />
              </Form.Item>
            </Col>
            <Col xs={24} md={12}>
              <Form.Item label="触发词" extra="来自数据集，生成图片时写在提示词里唤起训练结果">
                <Input
                  value={dataset ? dataset.triggerWord || '未设置' : ''}
                  placeholder="选择数据集后显示"
                  readOnly
                  variant="filled"
                  aria-label="触发词"
                  data-testid="trigger-word"
                />
              </Form.Item>
            </Col>
          </Row>
          <PresetNote dataset={dataset} baseModel={draft.baseModel} onReset={form.resetPreset} />
          <BasicParamFields draft={draft.params} errors={checked.errors} onChange={form.setParams} />
          <Collapse
            ghost
            items={[
              {
                key: 'advanced',
                label: advancedErrors ? <Typography.Text type="danger">高级参数（{advancedErrors} 项有误）</Typography.Text> : '高级参数',
                forceRender: true,
                children: <AdvancedParamFields draft={draft.params} errors={checked.errors} onChange={form.setParams} />,
              },
            ]}
          />
        </Form>
      </Col>
      <Col xs={24} xl={7}>
        <Card size="small" title="费用预估" data-testid="quote-panel">
          <Flex vertical gap={16}>
            <QuotePanel quote={quote} settling={settling} blocked={blocked} />
            <Button type="primary" size="large" block icon={<PlayCircleOutlined />} disabled={!canStart} onClick={open}>
              开始训练
            </Button>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              同时进行的训练任务最多 {LORA_MAX_ACTIVE_JOBS} 个；每轮结束保存一个模型并生成样图。
            </Typography.Text>
          </Flex>
        </Card>
      </Col>
      <StartModal
        pending={pending}
        onClose={() => setPending(null)}
        onRenew={renew}
        onStarted={(job) => {
          setPending(null);
          onStarted(job);
        }}
      />
    </Row>
  );
}

/** Which preset the parameters came from, and a way back to it after editing. */
function PresetNote({ dataset, baseModel, onReset }: { dataset: Dataset | null; baseModel: SdBaseModelId; onReset: () => void }) {
  if (!dataset) return null;
  return (
    <Flex align="center" gap={8} style={{ marginBottom: 12 }} data-testid="preset-note">
      <Typography.Text type="secondary">
        已按「{DATASET_KIND_LABELS[dataset.kind]}」预设（{baseModelName(baseModel)}）填入参数，可按需调整。
      </Typography.Text>
      <Button type="link" size="small" onClick={onReset}>
        恢复预设
      </Button>
    </Flex>
  );
}
