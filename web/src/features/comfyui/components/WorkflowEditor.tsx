/**
 * One workflow open for editing: its nodes in the order they run, each input with its own control,
 * or the raw API JSON; checked as it changes (the same check the server runs before any money
 * moves) and priced once the typing stops. 保存 writes the graph; 运行 saves first if needed, says
 * what is held, and runs the saved version.
 */
import { useMemo, useRef, useState } from 'react';
import { Alert, App, Button, Card, Flex, Input, Result, Skeleton, Space, Tabs, Tag, Tooltip, Typography, theme } from 'antd';
import { ArrowLeftOutlined, PlayCircleOutlined, SaveOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import {
  analyzeComfyGraph,
  DIFFUSION_MAX_ACTIVE,
  formatYuan,
  type ComfyGraph,
  type ComfyNodeError,
  type ComfyWorkflow,
  type DiffusionTask,
} from '@console/contract';
import { comfyApi, storeWorkflow, useComfyWorkflow } from '../api/comfyui';
import { isApiError } from '../../../api/errors';
import { CashShortAlert } from '../../../components/CashShortAlert';
import { LoadError } from '../../../components/LoadError';
import { useMoneyQuery } from '../../../session/useSession';
import { Note } from '../../diffusion';
import { nodeOrder, sameGraph } from './comfyViews';
import { NodeCard, withInput } from './NodeCard';
import { parseGraphJson, prettyGraph } from '../utils/workflowFile';
import { holdText, QuotePanel, useComfyQuote, useRunWorkflow } from './WorkflowQuote';

type EditorProps = { onClose: () => void; onStarted: (task: DiffusionTask, workflow: ComfyWorkflow) => void };

/** The JSON tab: the draft as text, applied to the nodes only when it parses as a graph. */
function JsonTab({
  draft,
  text,
  onText,
  onApply,
}: {
  draft: ComfyGraph;
  text: string | null;
  onText: (t: string | null) => void;
  onApply: (g: ComfyGraph) => void;
}) {
  const [problem, setProblem] = useState<{ title: string; detail: string } | null>(null);
  const apply = () => {
    if (text === null) return;
    const parsed = parseGraphJson(text);
    if (!parsed.ok) return setProblem({ title: parsed.title, detail: parsed.detail });
    setProblem(null);
    onApply(parsed.graph);
  };
  return (
    <Flex vertical gap={12}>
      <Note>
        ComfyUI 的 API 格式（与 ComfyUI 中 “Save (API Format)” 导出的相同）：每个节点是 {'{ "class_type", "inputs" }'}，连线写作 [&quot;节点 ID&quot;,
        输出序号]。改好后点「应用」。
      </Note>
      {problem && <Alert type="error" showIcon title={`JSON 无法应用：${problem.title}`} description={problem.detail} data-testid="json-problem" />}
      <Input.TextArea
        aria-label="工作流 JSON"
        className="mono"
        spellCheck={false}
        value={text ?? prettyGraph(draft)}
        onChange={(e) => onText(e.target.value)}
        autoSize={{ minRows: 16, maxRows: 36 }}
        style={{ fontSize: 12 }}
      />
      <Space>
        <Button type="primary" disabled={text === null} onClick={apply}>
          应用
        </Button>
        <Button
          disabled={text === null}
          onClick={() => {
            setProblem(null);
            onText(null);
          }}
        >
          撤销 JSON 修改
        </Button>
      </Space>
    </Flex>
  );
}

/** The check's errors by the node they are about; those about no node (no output, too many images) apart. */
function splitErrors(graph: ComfyGraph, errors: ComfyNodeError[]) {
  const byNode = new Map<string, ComfyNodeError[]>();
  const general: ComfyNodeError[] = [];
  for (const e of errors) {
    if (e.node && graph[e.node]) byNode.set(e.node, [...(byNode.get(e.node) ?? []), e]);
    else general.push(e);
  }
  return { byNode, general };
}

function EditorBody({ workflow, onClose, onStarted }: EditorProps & { workflow: ComfyWorkflow }) {
  const { modal } = App.useApp();
  const { token } = theme.useToken();
  const queryClient = useQueryClient();
  const money = useMoneyQuery();
  const [draft, setDraft] = useState<ComfyGraph>(workflow.graph);
  const [tab, setTab] = useState('nodes');
  /** The JSON tab's text while it differs from the draft (null: it shows the draft). */
  const [jsonText, setJsonText] = useState<string | null>(null);
  const dirty = !sameGraph(draft, workflow.graph);
  const analysis = useMemo(() => analyzeComfyGraph(draft), [draft]);
  const order = useMemo(() => nodeOrder(draft, analysis), [draft, analysis]);
  const { byNode, general } = useMemo(() => splitErrors(draft, analysis.ok ? [] : analysis.errors), [draft, analysis]);
  const { query: quote, settling } = useComfyQuote(analysis.ok ? draft : null);
  const blocked = analysis.ok ? null : '修改下方标出的问题后显示费用';

  const save = useMutation({
    mutationFn: (graph: ComfyGraph) => comfyApi.saveGraph(workflow.id, graph),
    onSuccess: (saved) => storeWorkflow(queryClient, saved),
    onError: (e) => {
      if (isApiError(e, 'COMFY_WORKFLOW_NOT_FOUND')) onClose();
    },
  });
  const runner = useRunWorkflow((task) => onStarted(task, workflow));
  const ready = analysis.ok && !!quote.data && !quote.isError && !settling && jsonText === null;
  // A double click opens one confirmation, not two.
  const confirming = useRef(false);

  const go = async () => {
    if (!ready || !quote.data || confirming.current) return;
    confirming.current = true;
    const q = quote.data;
    let saved = workflow;
    if (dirty) {
      try {
        saved = await save.mutateAsync(draft);
      } catch {
        confirming.current = false;
        return;
      }
    }
    const requestId = runner.requestIdFor(`${saved.id}@${saved.updatedAt}`);
    modal.confirm({
      title: `运行工作流「${saved.name}」`,
      content: (
        <Flex vertical gap={8}>
          <Typography.Text strong data-testid="run-hold">
            {holdText(q)}
          </Typography.Text>
          <Typography.Text type="secondary">
            每生成一张结算一张；取消时已生成的照常结算，其余退回；运行失败退回未生成部分。
            {money.data && `当前现金余额 ¥${formatYuan(money.data.cash)}。`}
          </Typography.Text>
        </Flex>
      ),
      okText: '确认运行',
      cancelText: '取消',
      onOk: () => runner.run(saved.id, requestId),
      afterClose: () => {
        confirming.current = false;
      },
    });
  };

  const leave = () => {
    if (!dirty && jsonText === null) return onClose();
    modal.confirm({
      title: '放弃未保存的修改？',
      content: `「${workflow.name}」有未保存的修改，返回列表后这些修改将丢失。`,
      okText: '放弃修改',
      okButtonProps: { danger: true },
      cancelText: '继续编辑',
      onOk: onClose,
    });
  };

  const nodeCount = Object.keys(draft).length;
  return (
    <Card
      data-testid="workflow-editor"
      className="card-head-wrap"
      title={
        <Flex align="center" gap={8} style={{ minWidth: 0 }}>
          <Tooltip title="返回工作流列表">
            <Button type="text" icon={<ArrowLeftOutlined />} aria-label="返回列表" onClick={leave} />
          </Tooltip>
          <Typography.Text strong ellipsis style={{ minWidth: 0 }} title={workflow.name}>
            {workflow.name}
          </Typography.Text>
          {dirty && <Tag color="warning">未保存</Tag>}
        </Flex>
      }
      extra={
        <Space>
          <Button icon={<SaveOutlined />} disabled={!dirty || jsonText !== null} loading={save.isPending} onClick={() => save.mutate(draft)}>
            保存
          </Button>
          <Button type="primary" icon={<PlayCircleOutlined />} disabled={!ready} loading={runner.pending} onClick={() => void go()}>
            运行
          </Button>
        </Space>
      }
    >
      <Flex vertical gap={16}>
        <div
          data-testid="quote-panel"
          style={{
            background: token.colorFillAlter,
            borderRadius: token.borderRadiusLG,
            padding: '12px 16px',
            border: `1px solid ${token.colorBorderSecondary}`,
          }}
        >
          <QuotePanel quote={quote} settling={settling} blocked={blocked} />
        </div>
        {runner.cashError && <CashShortAlert message={runner.cashError} />}
        {!analysis.ok && (
          <Alert
            type="error"
            showIcon
            data-testid="graph-errors"
            title={
              general.length
                ? `工作流有 ${analysis.errors.length} 处问题，修改后才能运行`
                : `工作流有 ${analysis.errors.length} 处问题，修改后才能运行：问题已标在下方红框的节点上`
            }
            description={general.length ? general.map((e) => <div key={e.message}>{e.message}</div>) : undefined}
          />
        )}
        {jsonText !== null && <Alert type="warning" showIcon title="JSON 有未应用的修改：在「JSON」中点「应用」后才会更新节点和费用，才能保存或运行" />}
        <Tabs
          activeKey={tab}
          onChange={setTab}
          items={[
            {
              key: 'nodes',
              label: `节点（${nodeCount}）`,
              children: (
                <Flex vertical gap={12}>
                  <Note>按运行顺序排列；连线（← 节点 X 的输出 N）在 JSON 中修改。</Note>
                  <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(340px, 1fr))', gap: 12, alignItems: 'start' }}>
                    {order.map(({ id, runs }) => (
                      <NodeCard
                        key={id}
                        id={id}
                        graph={draft}
                        runs={runs}
                        errors={byNode.get(id) ?? []}
                        onInput={(node, input, value) => setDraft((g) => withInput(g, node, input, value))}
                      />
                    ))}
                  </div>
                </Flex>
              ),
            },
            {
              key: 'json',
              label: 'JSON',
              children: (
                <JsonTab
                  draft={draft}
                  text={jsonText}
                  onText={setJsonText}
                  onApply={(graph) => {
                    setDraft(graph);
                    setJsonText(null);
                  }}
                />
              ),
            },
          ]}
        />
        <Note>
          运行的是保存后的版本（有未保存的修改时，运行前先保存）。按输出张数计费：RTX 4090
          时长包先抵扣整张，其余从现金余额预扣（赠送金不能用于生成）；同时进行的生成任务最多 {DIFFUSION_MAX_ACTIVE} 个。
        </Note>
      </Flex>
    </Card>
  );
}

export function WorkflowEditor({ id, onClose, onStarted }: EditorProps & { id: string }) {
  const workflow = useComfyWorkflow(id);
  if (workflow.isError && !workflow.data) {
    const gone = isApiError(workflow.error, 'COMFY_WORKFLOW_NOT_FOUND');
    return (
      <Card>
        {gone ? (
          <Result
            status="warning"
            title="工作流不存在或已删除"
            extra={
              <Button type="primary" onClick={onClose}>
                返回列表
              </Button>
            }
          />
        ) : (
          <LoadError error={workflow.error} onRetry={() => void workflow.refetch()} />
        )}
      </Card>
    );
  }
  if (!workflow.data) {
    return (
      <Card>
        <Skeleton active paragraph={{ rows: 8 }} />
      </Card>
    );
  }
  // A fresh draft per workflow: opening another one starts from what it saved.
  return <EditorBody key={id} workflow={workflow.data} onClose={onClose} onStarted={onStarted} />;
}
