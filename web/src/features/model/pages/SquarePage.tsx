import type { ReactNode } from 'react';
import { Alert, Button, Card, Col, Empty, Flex, Input, Pagination, Radio, Row, Skeleton, Typography } from 'antd';
import { Link } from 'react-router';
import { MODEL_TYPES, PAGE, type ModelType } from '@console/contract';
import { SQUARE_KEYS, gatewayBase, squareApi, type ModelFilters } from '../api/model';
import { LoadError } from '../../../components/LoadError';
import { PageFrame } from '../../../components/PageFrame';
import { RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { nextPaging, readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { MODEL_TYPE_LABEL, SquareModelCard } from '../components/SquareModelCard';

/** Cards come in rows of up to four: page sizes that fill whole rows. */
const SIZES: readonly number[] = [12, 24, 48];
const ALL = '';

interface SquareQuery extends ModelFilters, Paging {}

function readQuery(p: URLSearchParams): SquareQuery {
  const type = p.get('type');
  return {
    keyword: p.get('keyword') || undefined,
    provider: p.get('provider') || undefined,
    type: MODEL_TYPES.find((t) => t === type),
    tag: p.get('tag') || undefined,
    ...readPaging(p, SIZES),
  };
}

function writeQuery(q: SquareQuery): URLSearchParams {
  const p = new URLSearchParams();
  for (const key of ['keyword', 'provider', 'type', 'tag'] as const) {
    const value = q[key];
    if (value) p.set(key, value);
  }
  return writePaging(q, p, SIZES);
}

function FilterRow({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Flex gap={12} align="baseline">
      <Typography.Text type="secondary" style={{ flex: '0 0 auto', width: 48 }}>
        {label}
      </Typography.Text>
      <div style={{ flex: 1, minWidth: 0 }}>{children}</div>
    </Flex>
  );
}

function Choices({
  label,
  value,
  all,
  options,
  onChange,
}: {
  label: string;
  value: string | undefined;
  all: string;
  options: { value: string; label: string }[];
  onChange: (v: string | undefined) => void;
}) {
  return (
    <FilterRow label={label}>
      <Radio.Group
        aria-label={label}
        size="small"
        optionType="button"
        value={value ?? ALL}
        onChange={(e) => onChange((e.target.value as string) || undefined)}
        options={[{ value: ALL, label: all }, ...options]}
        style={{ display: 'flex', flexWrap: 'wrap', gap: 8 }}
      />
    </FilterRow>
  );
}

/** /model/square — the models on offer: search, filter by provider, type and tag, what each costs, and where to try or call it. */
export default function SquarePage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const list = usePagedQuery({
    queryKey: SQUARE_KEYS.list(q, q.page, q.pageSize),
    queryFn: (signal) => squareApi.models(q, signal),
  });
  const data = list.data;
  const filtered = Boolean(q.keyword || q.provider || q.type || q.tag);
  /** A new filter starts again at page 1. */
  const filter = (change: Partial<ModelFilters>) => url.set({ ...url.latest(), ...change, page: 1 });
  const clear = () => url.set({ page: 1, pageSize: q.pageSize });

  let body: ReactNode;
  if (list.isError && !data) body = <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  else if (!data)
    body = (
      <Row gutter={[16, 16]} aria-busy="true" aria-label="模型加载中">
        {Array.from({ length: 4 }, (_, i) => (
          <Col key={i} xs={24} md={12} xl={8} xxl={6}>
            <Card size="small">
              <Skeleton active />
            </Card>
          </Col>
        ))}
      </Row>
    );
  else if (data.items.length === 0)
    body = (
      <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={filtered ? '没有符合条件的模型' : '模型广场暂未上架模型，请稍后再来'}>
        {filtered && (
          <Button type="primary" onClick={clear}>
            清除筛选条件
          </Button>
        )}
      </Empty>
    );
  else
    body = (
      <Flex vertical gap={16} style={{ opacity: list.isFetching && list.isPlaceholderData ? 0.5 : 1 }}>
        <Row gutter={[16, 16]}>
          {data.items.map((m) => (
            <Col key={m.id} xs={24} md={12} xl={8} xxl={6}>
              <SquareModelCard model={m} />
            </Col>
          ))}
        </Row>
        <Flex justify="flex-end">
          <Pagination
            current={q.page}
            pageSize={q.pageSize}
            total={data.total}
            showSizeChanger
            pageSizeOptions={[...SIZES]}
            showTotal={(t) => `共 ${t} 个模型`}
            onChange={(page, pageSize) => url.set({ ...url.latest(), ...nextPaging(q, page, pageSize) })}
          />
        </Flex>
      </Flex>
    );

  return (
    <PageFrame extra={<RefreshButton list={list} />}>
      <Flex vertical gap={16}>
        <Alert
          type="info"
          showIcon
          title="在线体验或通过 API 调用"
          description={
            <>
              对话模型可点击「在线体验」直接对话。通过 API 调用时，先在
              <Link to={PAGE.modelKey}>「API KEY」</Link>
              页面新建密钥，再按 OpenAI 接口格式请求 <Typography.Text code>{gatewayBase()}</Typography.Text>
              （如 /chat/completions、/embeddings），model 参数填卡片上的模型 ID。价格按每百万 Token 计，输入与输出分别计费。
            </>
          }
        />
        <Card>
          <Flex vertical gap={12}>
            <Input.Search
              key={q.keyword ?? ''}
              aria-label="搜索模型"
              placeholder="搜索模型名称、ID 或介绍"
              allowClear
              defaultValue={q.keyword}
              maxLength={50}
              enterButton="搜索"
              onSearch={(v) => filter({ keyword: v.trim() || undefined })}
              style={{ maxWidth: 480 }}
            />
            {data ? (
              <>
                {data.providers.length > 0 && (
                  <Choices
                    label="提供方"
                    all="全部提供方"
                    value={q.provider}
                    options={data.providers.map((p) => ({ value: p, label: p }))}
                    onChange={(provider) => filter({ provider })}
                  />
                )}
                <Choices
                  label="类型"
                  all="全部类型"
                  value={q.type}
                  options={MODEL_TYPES.map((t) => ({ value: t, label: MODEL_TYPE_LABEL[t] }))}
                  onChange={(type) => filter({ type: type as ModelType | undefined })}
                />
                {data.tags.length > 0 && (
                  <Choices
                    label="标签"
                    all="全部标签"
                    value={q.tag}
                    options={data.tags.map((t) => ({ value: t, label: t }))}
                    onChange={(tag) => filter({ tag })}
                  />
                )}
              </>
            ) : (
              !list.isError && <Skeleton.Input active size="small" style={{ width: 320 }} />
            )}
          </Flex>
        </Card>
        {list.isError && data && (
          <Alert
            type="warning"
            showIcon
            title={`模型列表刷新失败：${list.error.message}`}
            action={
              <Button size="small" onClick={() => void list.refetch()}>
                重试
              </Button>
            }
          />
        )}
        {body}
      </Flex>
    </PageFrame>
  );
}
