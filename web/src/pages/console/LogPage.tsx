import { Button, Card, Flex, Select, Space, Tag } from 'antd';
import { InstanceCategory, type InstanceCategory as Category } from '@console/contract';
import type { OperationFilter } from '../../api/instances';
import { PageFrame } from '../../components/PageFrame';
import { useUrlState } from '../../routing/useUrlState';
import { LOG_PAGE_SIZES, OperationLogTable } from './instances/OperationLogTable';

interface LogQuery {
  category?: Category;
  /** Set by a link from an instance ("查看全部"): only that instance's operations. */
  instance?: string;
  page: number;
  pageSize: number;
}

function readQuery(p: URLSearchParams): LogQuery {
  const category = p.get('category');
  const page = Number(p.get('page'));
  const pageSize = Number(p.get('pageSize'));
  return {
    category: category && (InstanceCategory.values as string[]).includes(category) ? (category as Category) : undefined,
    instance: p.get('instance')?.trim().slice(0, 64) || undefined,
    page: Number.isInteger(page) && page > 0 ? page : 1,
    pageSize: LOG_PAGE_SIZES.includes(pageSize) ? pageSize : 10,
  };
}

function writeQuery(q: LogQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.category) p.set('category', q.category);
  if (q.instance) p.set('instance', q.instance);
  if (q.page > 1) p.set('page', String(q.page));
  if (q.pageSize !== 10) p.set('pageSize', String(q.pageSize));
  return p;
}

/** /console/log: every operation on the account's instances (by the account, its children or the system). */
export default function LogPage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const set = (patch: Partial<LogQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const filter: OperationFilter = { instance: q.instance, category: q.category };
  const filtered = Boolean(q.category || q.instance);

  return (
    <PageFrame>
      <Card>
        <Flex vertical gap={16}>
          <Space wrap size={12}>
            <Select<Category>
              aria-label="产品类别"
              placeholder="全部产品"
              allowClear
              style={{ width: 160 }}
              value={q.category}
              onChange={(category) => set({ category })}
              options={InstanceCategory.values.map((c) => ({ value: c, label: InstanceCategory.label(c) }))}
            />
            {q.instance && (
              <Tag closable onClose={() => set({ instance: undefined })} style={{ marginInlineEnd: 0 }}>
                实例 <span className="mono">{q.instance}</span>
              </Tag>
            )}
            {filtered && (
              <Button type="link" onClick={() => set({ category: undefined, instance: undefined })} style={{ paddingInline: 4 }}>
                清除筛选
              </Button>
            )}
          </Space>
          <OperationLogTable
            filter={filter}
            page={q.page}
            pageSize={q.pageSize}
            onChange={(page, pageSize) => url.set({ ...url.latest(), page, pageSize })}
            emptyText={filtered ? '没有符合筛选条件的操作记录' : '暂无操作记录：实例的创建、开关机、释放等操作会记录在这里'}
          />
        </Flex>
      </Card>
    </PageFrame>
  );
}
