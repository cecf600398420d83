import { Button, Card, Flex, Select, Space, Tag } from 'antd';
import { InstanceCategory, type InstanceCategory as Category } from '@console/contract';
import { useQuery } from '@tanstack/react-query';
import { accountQueries } from '../../account';
import type { OperationFilter } from '../api/instances';
import { useSession } from '../../../session/useSession';
import { PageFrame } from '../../../components/PageFrame';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { OperationLogTable } from '../components/OperationLogTable';

interface LogQuery extends Paging {
  category?: Category;
  /** Set by a link from an instance ("查看全部"): only that instance's operations. */
  instance?: string;
  /** A child account's id: what that child did. */
  actor?: string;
}

function readQuery(p: URLSearchParams): LogQuery {
  const category = p.get('category');
  return {
    category: category && (InstanceCategory.values as string[]).includes(category) ? (category as Category) : undefined,
    instance: p.get('instance')?.trim().slice(0, 64) || undefined,
    actor: /^[0-9a-f-]{36}$/i.test(p.get('actor') ?? '') ? p.get('actor')! : undefined,
    ...readPaging(p),
  };
}

function writeQuery(q: LogQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.category) p.set('category', q.category);
  if (q.instance) p.set('instance', q.instance);
  if (q.actor) p.set('actor', q.actor);
  return writePaging(q, p);
}

/** /console/log: every operation on the account's instances (by the account, its children or the system). */
export default function LogPage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const set = (patch: Partial<LogQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const filter: OperationFilter = { instance: q.instance, category: q.category, actor: q.actor };
  const filtered = Boolean(q.category || q.instance || q.actor);

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
            <ChildSelect value={q.actor} onChange={(actor) => set({ actor })} />
            {q.instance && (
              <Tag closable onClose={() => set({ instance: undefined })} style={{ marginInlineEnd: 0 }}>
                实例 <span className="mono">{q.instance}</span>
              </Tag>
            )}
            {filtered && (
              <Button type="link" onClick={() => set({ category: undefined, instance: undefined, actor: undefined })} style={{ paddingInline: 4 }}>
                清除筛选
              </Button>
            )}
          </Space>
          <OperationLogTable
            filter={filter}
            paging={q}
            onPage={(paging) => url.set({ ...url.latest(), ...paging })}
            emptyText={filtered ? '没有符合筛选条件的操作记录' : '暂无操作记录：实例的创建、开关机、释放等操作会记录在这里'}
          />
        </Flex>
      </Card>
    </PageFrame>
  );
}

/** A parent sees what each child did: the log filtered by one child account. */
function ChildSelect({ value, onChange }: { value?: string; onChange: (id?: string) => void }) {
  const { user } = useSession();
  const children = useQuery({
    ...accountQueries.children(1, 100),
    enabled: !!user && !user.isChild,
    staleTime: 60_000,
  });
  if (!user || user.isChild || !children.data?.total) return null;
  return (
    <Select<string>
      aria-label="操作人"
      placeholder="全部操作人"
      allowClear
      style={{ width: 180 }}
      value={value}
      onChange={onChange}
      options={children.data.items.map((c) => ({ value: c.id, label: `子账号 ${c.childName}` }))}
    />
  );
}
