/** One node of the workflow being edited: its names and id, and each input with the control its kind takes. */
import { Alert, Button, Card, Flex, Input, InputNumber, Select, Tag, Tooltip, Typography, theme } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import type { ComfyGraph, ComfyInputSpec, ComfyInputValue, ComfyNode, ComfyNodeError } from '@console/contract';
import { INPUT_LABELS, nodeNames, nodeSpecOf } from './comfyViews';

/** A new value for one input of one node (undefined: the input is cleared). */
export type SetInput = (node: string, input: string, value: ComfyInputValue | undefined) => void;

/** The graph with one input changed; clearing a number leaves the input out, which the check reports as 未填写. */
export function withInput(graph: ComfyGraph, node: string, input: string, value: ComfyInputValue | undefined): ComfyGraph {
  const current = graph[node];
  if (!current) return graph;
  const inputs = { ...current.inputs };
  if (value === undefined) delete inputs[input];
  else inputs[input] = value;
  return { ...graph, [node]: { ...current, inputs } };
}

/** How fine a float input moves with the arrows: CFG by halves, strengths and denoise by hundredths. */
const floatStep = (spec: { min: number; max: number }) => (spec.max - spec.min > 10 ? 0.5 : 0.05);

const isLink = (v: ComfyInputValue | undefined): v is [string, number] => Array.isArray(v);

/** "← 节点 4 的输出 1": where a linked input comes from (the node's name on hover), and the type it carries. */
function LinkValue({ graph, link }: { graph: ComfyGraph; link: [string, number] }) {
  const [from, output] = link;
  const source = graph[from];
  const type = source && nodeSpecOf(source.class_type)?.outputs[output];
  return (
    <Flex align="center" gap={6} wrap>
      <Tooltip title={source ? `${nodeNames(source).label}（${source.class_type}）` : `节点 ${from} 不存在`}>
        <Typography.Text type="secondary" data-testid="node-link">
          ← 节点 {from} 的输出 {output}
        </Typography.Text>
      </Tooltip>
      {type && (
        <Tag variant="filled" style={{ marginInlineEnd: 0, fontSize: 11, lineHeight: '18px' }}>
          {type}
        </Tag>
      )}
    </Flex>
  );
}

function InputControl({
  nodeId,
  name,
  spec,
  value,
  graph,
  invalid,
  onChange,
}: {
  nodeId: string;
  name: string;
  spec: ComfyInputSpec | undefined;
  value: ComfyInputValue | undefined;
  graph: ComfyGraph;
  /** The check found fault with this input: the control is outlined in red. */
  invalid: boolean;
  onChange: (value: ComfyInputValue | undefined) => void;
}) {
  const label = `节点 ${nodeId} 的 ${name}`;
  const status = invalid ? ('error' as const) : undefined;
  if (isLink(value)) return <LinkValue graph={graph} link={value} />;
  if (!spec || spec.kind === 'link') {
    // An input this node does not take as a value (an unsupported node, a link typed in by hand): shown as it is.
    return (
      <Typography.Text code aria-label={label}>
        {value === undefined ? '（未连接）' : JSON.stringify(value)}
      </Typography.Text>
    );
  }
  switch (spec.kind) {
    case 'int':
    case 'float':
      return (
        <Flex gap={4} style={{ width: '100%' }}>
          <InputNumber
            aria-label={label}
            status={status}
            value={typeof value === 'number' ? value : null}
            min={spec.min}
            max={spec.max}
            step={spec.kind === 'int' ? (spec.multipleOf ?? 1) : floatStep(spec)}
            precision={spec.kind === 'int' ? 0 : undefined}
            onChange={(v) => onChange(typeof v === 'number' ? v : undefined)}
            style={{ flex: 1, minWidth: 0 }}
          />
          {name === 'seed' && (
            <Tooltip title="随机种子">
              <Button icon={<ReloadOutlined />} aria-label={`节点 ${nodeId} 随机种子`} onClick={() => onChange(Math.floor(Math.random() * 2 ** 32))} />
            </Tooltip>
          )}
        </Flex>
      );
    case 'string':
      return spec.multiline ? (
        <Input.TextArea
          aria-label={label}
          status={status}
          value={typeof value === 'string' ? value : ''}
          autoSize={{ minRows: 2, maxRows: 8 }}
          maxLength={4000}
          onChange={(e) => onChange(e.target.value)}
        />
      ) : (
        <Input aria-label={label} status={status} value={typeof value === 'string' ? value : ''} maxLength={200} onChange={(e) => onChange(e.target.value)} />
      );
    case 'enum':
      return (
        <Select
          aria-label={label}
          status={status}
          value={typeof value === 'string' ? value : undefined}
          options={spec.options.map((o) => ({ value: o, label: o }))}
          onChange={(v: string) => onChange(v)}
          style={{ width: '100%' }}
          showSearch
          popupMatchSelectWidth={false}
        />
      );
  }
}

/** The inputs in the node's own order, then any it does not know (kept, shown as they are). */
function inputNames(node: ComfyNode): string[] {
  const known = Object.keys(nodeSpecOf(node.class_type)?.inputs ?? {});
  return [...known, ...Object.keys(node.inputs).filter((k) => !known.includes(k))];
}

export function NodeCard({
  id,
  graph,
  runs,
  errors,
  onInput,
}: {
  id: string;
  graph: ComfyGraph;
  /** Whether an output needs this node (a node nothing uses does not run). */
  runs: boolean;
  errors: ComfyNodeError[];
  onInput: SetInput;
}) {
  const { token } = theme.useToken();
  const node = graph[id]!;
  const spec = nodeSpecOf(node.class_type);
  const { label, title } = nodeNames(node);
  return (
    <Card
      size="small"
      data-testid="node-card"
      data-node={id}
      style={errors.length ? { borderColor: token.colorErrorBorder } : runs ? undefined : { opacity: 0.75 }}
      styles={{ header: { minHeight: 40 }, body: { paddingBlock: 10 } }}
      title={
        <Flex align="center" gap={8} style={{ minWidth: 0 }}>
          <Tag style={{ marginInlineEnd: 0 }} className="mono">
            #{id}
          </Tag>
          <Typography.Text strong>{label}</Typography.Text>
          <Typography.Text type="secondary" ellipsis style={{ fontWeight: 'normal', fontSize: 12, minWidth: 0 }}>
            {title}
          </Typography.Text>
        </Flex>
      }
      extra={!runs && <Tag>不参与运行</Tag>}
    >
      <Flex vertical gap={8}>
        {errors.map((e) => (
          <Alert key={e.message} type="error" showIcon title={e.message} style={{ paddingBlock: 4 }} />
        ))}
        {inputNames(node).map((name) => {
          const inputSpec = spec?.inputs[name as keyof typeof spec.inputs] as ComfyInputSpec | undefined;
          const value = node.inputs[name];
          const linked = isLink(value) || inputSpec?.kind === 'link';
          return (
            <Flex key={name} gap={12} align={linked ? 'center' : 'flex-start'} wrap={false}>
              <Flex vertical style={{ width: 120, flex: 'none', paddingTop: linked ? 0 : 4 }}>
                <Typography.Text style={{ fontSize: 13 }}>{INPUT_LABELS[name] ?? name}</Typography.Text>
                {INPUT_LABELS[name] && (
                  <Typography.Text type="secondary" className="mono" style={{ fontSize: 11 }}>
                    {name}
                  </Typography.Text>
                )}
              </Flex>
              <div style={{ flex: 1, minWidth: 0 }}>
                <InputControl
                  nodeId={id}
                  name={name}
                  spec={inputSpec}
                  value={value}
                  graph={graph}
                  invalid={errors.some((e) => e.message.includes(`）的 ${name} `))}
                  onChange={(v) => onInput(id, name, v)}
                />
              </div>
            </Flex>
          );
        })}
      </Flex>
    </Card>
  );
}
