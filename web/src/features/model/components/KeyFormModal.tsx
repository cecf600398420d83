/**
 * 新建密钥 / 编辑密钥: the name and every limit of a key. Each field is checked by the contract's own
 * schema, so the dialog refuses exactly what the server would (an IP list line by line, with the
 * contract's message), and money is typed in yuan and sent in 0.0001-yuan units.
 */
import { useState } from 'react';
import { App, Button, DatePicker, Form, Input, InputNumber, Select, Typography, type FormRule as Rule } from 'antd';
import { useQuery } from '@tanstack/react-query';
import type { Dayjs } from 'dayjs';
import type { z } from 'zod';
import {
  API_KEY_RPM_MAX,
  API_KEY_TPM_MAX,
  apiKeyCreateRequestSchema,
  yuanToUnits,
  type ApiKey,
  type ApiKeyCreateRequest,
  type ApiKeyCreated,
  type ApiKeyUpdateRequest,
  type Model,
} from '@console/contract';
import { apiKeysApi, squareQueries } from '../api/model';
import { formatUnitPrice } from '../../../components/Price';
import { beijingWallClock, instantOfBeijingWallClock } from '../../../lib/time';
import { FormModal } from '../../../components/FormModal';

const fields = apiKeyCreateRequestSchema.shape;
const EXPIRY_FORMAT = 'YYYY-MM-DD HH:mm';

interface Values {
  name: string;
  allowedModels?: string[];
  /** One address or CIDR range a line. */
  ips?: string;
  expiresAt?: Dayjs | null;
  /** Yuan, as typed; empty: no limit. */
  spendLimitYuan?: string;
  rpmLimit?: number | null;
  tpmLimit?: number | null;
}

type Settings = Required<ApiKeyCreateRequest>;

/** The lines of the IP field that say something. */
export const ipLines = (text: string | undefined) =>
  (text ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

/** A time to the second (what the dialog sends), for telling whether the expiry changed. */
const instant = (iso: string | null) => (iso === null ? null : Math.floor(Date.parse(iso) / 1000));

/** The first complaint of a contract schema about `value`, or null when it takes it. */
function complaint(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  return parsed.success ? null : (parsed.error.issues[0] ?? null);
}

/** Yuan typed by a person as 0.0001-yuan units; throws with the message to show. */
function spendLimitUnits(text: string): string {
  let units: bigint;
  try {
    units = yuanToUnits(text);
  } catch {
    throw new Error('消费上限须为金额（元），最多 4 位小数，如 100 或 49.5');
  }
  if (units <= 0n) throw new Error('消费上限须大于 0；不设上限请留空');
  const issue = complaint(fields.spendLimit, String(units));
  if (issue) throw new Error(issue.message);
  return String(units);
}

const nameRules: Rule[] = [
  { required: true, whitespace: true, message: '请输入密钥名称' },
  {
    validator: async (_, v: string | undefined) => {
      const issue = v?.trim() ? complaint(fields.name, v) : null;
      if (issue) throw new Error(issue.message);
    },
  },
];

const ipRules: Rule[] = [
  {
    validator: async (_, v: string | undefined) => {
      const lines = ipLines(v);
      const issue = complaint(fields.allowedIps, lines);
      if (!issue) return;
      const line = typeof issue.path[0] === 'number' ? issue.path[0] : null;
      throw new Error(line === null ? issue.message : `第 ${line + 1} 行：${issue.message}`);
    },
  },
];

const spendRules: Rule[] = [
  {
    validator: async (_, v: string | undefined) => {
      if (v?.trim()) spendLimitUnits(v.trim());
    },
  },
];

const limitRules = (schema: z.ZodType): Rule[] => [
  {
    validator: async (_, v: number | null | undefined) => {
      const issue = v === null || v === undefined ? null : complaint(schema, v);
      if (issue) throw new Error(issue.message);
    },
  },
];

/** A new expiry must be in the future; an expired key's old one may stay while other settings change. */
const expiryRules = (current: string | null): Rule[] => [
  {
    validator: async (_, v: Dayjs | null | undefined) => {
      if (v && !v.isAfter(beijingWallClock()) && Math.floor(instantOfBeijingWallClock(v).getTime() / 1000) !== instant(current))
        throw new Error('过期时间须晚于当前时间，请重新选择；不设过期请清空');
    },
  },
];

function toSettings(v: Values): Settings {
  const yuan = v.spendLimitYuan?.trim();
  return {
    name: v.name.trim(),
    allowedModels: v.allowedModels ?? [],
    allowedIps: ipLines(v.ips),
    // The picker holds Beijing time (lib/time): sent as the instant it means, to the second.
    expiresAt: v.expiresAt ? instantOfBeijingWallClock(v.expiresAt.millisecond(0)).toISOString().replace('.000Z', 'Z') : null,
    spendLimit: yuan ? spendLimitUnits(yuan) : null,
    rpmLimit: v.rpmLimit ?? null,
    tpmLimit: v.tpmLimit ?? null,
  };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** What the edit changes: only those fields are sent (an expired key keeps its past expiry unless it is changed). */
function changes(key: ApiKey, s: Settings): ApiKeyUpdateRequest {
  const body: ApiKeyUpdateRequest = {};
  if (s.name !== key.name) body.name = s.name;
  if (instant(s.expiresAt) !== instant(key.expiresAt)) body.expiresAt = s.expiresAt;
  if (s.spendLimit !== key.spendLimit) body.spendLimit = s.spendLimit;
  if (!sameList(s.allowedModels, key.allowedModels)) body.allowedModels = s.allowedModels;
  if (!sameList(s.allowedIps, key.allowedIps)) body.allowedIps = s.allowedIps;
  if (s.rpmLimit !== key.rpmLimit) body.rpmLimit = s.rpmLimit;
  if (s.tpmLimit !== key.tpmLimit) body.tpmLimit = s.tpmLimit;
  return body;
}

function initialValues(key: ApiKey | null): Partial<Values> {
  if (!key) return { allowedModels: [], ips: '', expiresAt: null, spendLimitYuan: '', rpmLimit: null, tpmLimit: null };
  return {
    name: key.name,
    allowedModels: key.allowedModels,
    ips: key.allowedIps.join('\n'),
    expiresAt: key.expiresAt ? beijingWallClock(key.expiresAt) : null,
    spendLimitYuan: key.spendLimit ? formatUnitPrice(key.spendLimit) : '',
    rpmLimit: key.rpmLimit,
    tpmLimit: key.tpmLimit,
  };
}

/** The square's models as picker options; a model the key allows that has left the square stays, marked. */
function modelOptions(models: Model[] | undefined, chosen: readonly string[]) {
  const options = (models ?? []).map((m) => ({ value: m.id, label: `${m.name}（${m.id}）` }));
  const known = new Set(options.map((o) => o.value));
  return [...options, ...chosen.filter((id) => !known.has(id)).map((id) => ({ value: id, label: `${id}（已下架）` }))];
}

/** The squares' models for the picker: the whole catalogue, cached across the page. */
export function useAllModels() {
  return useQuery({ ...squareQueries.all(), staleTime: 60_000 });
}

export function KeyFormModal({
  apiKey,
  onClose,
  onCreated,
  onSaved,
}: {
  apiKey: ApiKey | null;
  onClose: () => void;
  onCreated: (k: ApiKeyCreated) => void;
  onSaved: () => void;
}) {
  const [form] = Form.useForm<Values>();
  const [busy, setBusy] = useState(false);
  const { message } = App.useApp();
  const models = useAllModels();

  const save = async () => {
    const v = await form.validateFields().catch(() => null);
    if (!v) return; // the form says what is wrong
    const settings = toSettings(v);
    setBusy(true);
    try {
      if (apiKey) {
        const body = changes(apiKey, settings);
        if (Object.keys(body).length > 0) {
          await apiKeysApi.update(apiKey.id, body);
          void message.success(`密钥「${settings.name}」已保存`);
          onSaved();
        } else void message.info('没有修改任何设置');
        onClose();
      } else {
        const created = await apiKeysApi.create(settings);
        onSaved();
        onCreated(created);
      }
    } catch {
      // shown by the request layer (上限已满、模型已下架、过期时间已过……)
    } finally {
      setBusy(false);
    }
  };

  return (
    <FormModal
      title={apiKey ? `编辑密钥「${apiKey.name}」` : '新建密钥'}
      okText={apiKey ? '保存' : '创建'}
      width={600}
      busy={busy}
      onSave={save}
      onClose={onClose}
    >
      <Form form={form} layout="vertical" requiredMark={false} initialValues={initialValues(apiKey)}>
        <Form.Item name="name" label="密钥名称" rules={nameRules} extra="用于区分不同应用或环境，如「生产环境」「测试脚本」">
          <Input maxLength={50} placeholder="如：生产环境" />
        </Form.Item>
        <Form.Item
          name="allowedModels"
          label="可用模型"
          extra={
            models.isError ? (
              <Typography.Text type="danger">
                模型列表加载失败，
                <Button type="link" size="small" style={{ padding: 0 }} onClick={() => void models.refetch()}>
                  重试
                </Button>
              </Typography.Text>
            ) : (
              '不选则可调用模型广场中的全部模型'
            )
          }
        >
          <Select
            mode="multiple"
            aria-label="可用模型"
            allowClear
            loading={models.isPending}
            placeholder="全部模型"
            optionFilterProp="label"
            options={modelOptions(models.data, apiKey?.allowedModels ?? [])}
          />
        </Form.Item>
        <Form.Item name="ips" label="IP 白名单" rules={ipRules} extra="每行一个 IP 地址或 CIDR 网段（支持 IPv6），最多 100 条；留空则不限来源">
          <Input.TextArea rows={3} placeholder={'203.0.113.7\n10.0.0.0/8'} spellCheck={false} />
        </Form.Item>
        <Form.Item name="expiresAt" label="过期时间" rules={expiryRules(apiKey?.expiresAt ?? null)} extra="到期后密钥自动失效；留空则永不过期">
          <DatePicker
            aria-label="过期时间"
            showTime={{ format: 'HH:mm' }}
            format={EXPIRY_FORMAT}
            placeholder="永不过期"
            disabledDate={(d) => d.isBefore(beijingWallClock(), 'day')}
            presets={[
              { label: '7 天后', value: () => beijingWallClock().add(7, 'day') },
              { label: '30 天后', value: () => beijingWallClock().add(30, 'day') },
              { label: '90 天后', value: () => beijingWallClock().add(90, 'day') },
              { label: '1 年后', value: () => beijingWallClock().add(1, 'year') },
            ]}
            style={{ width: 240 }}
          />
        </Form.Item>
        <Form.Item name="spendLimitYuan" label="消费上限（元）" rules={spendRules} extra="通过该密钥累计消费达到上限后，请求将被拒绝；留空则仅受账户余额限制">
          <Input prefix="¥" inputMode="decimal" maxLength={16} placeholder="不限" style={{ width: 240 }} />
        </Form.Item>
        <Form.Item name="rpmLimit" label="每分钟请求数上限（RPM）" rules={limitRules(fields.rpmLimit)} extra="留空则不限">
          <InputNumber aria-label="每分钟请求数上限" min={1} max={API_KEY_RPM_MAX} precision={0} placeholder="不限" style={{ width: 240 }} />
        </Form.Item>
        <Form.Item name="tpmLimit" label="每分钟 Token 数上限（TPM）" rules={limitRules(fields.tpmLimit)} extra="留空则不限" style={{ marginBottom: 0 }}>
          <InputNumber aria-label="每分钟 Token 数上限" min={1} max={API_KEY_TPM_MAX} precision={0} placeholder="不限" style={{ width: 240 }} />
        </Form.Item>
      </Form>
    </FormModal>
  );
}
