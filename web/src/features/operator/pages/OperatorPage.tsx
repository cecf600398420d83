import { Card, Tabs } from 'antd';
import { PageFrame } from '../../../components/PageFrame';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { INVOICE_FILTERS, InvoiceQueue, type InvoiceFilter } from '../components/InvoiceQueue';
import { ModelChannelsTab } from '../components/ModelChannelsTab';
import { RegisteredImagesTab } from '../components/RegisteredImagesTab';
import { ReviewLogTable } from '../components/ReviewLogTable';
import { REVIEW_FILTERS, ReviewQueue, type ReviewFilter } from '../components/ReviewQueue';
import { UserTable } from '../components/UserTable';
import { useRoleRefreshOnRefusal } from '../hooks/useRoleRefresh';

const TABS = ['enterprise', 'student', 'invoices', 'users', 'log', 'models', 'images'] as const;
type Tab = (typeof TABS)[number];

export interface OperatorQuery extends Paging {
  tab: Tab;
  /** Review tabs (a ReviewFilter) and the invoice tab (an InvoiceFilter); 'Pending' by default on both. */
  status: ReviewFilter | InvoiceFilter;
  /** Users tab only: mobile, e-mail or name. */
  q: string;
}

function readQuery(p: URLSearchParams): OperatorQuery {
  const tab = p.get('tab');
  const status = p.get('status');
  const t: Tab = (TABS as readonly string[]).includes(tab ?? '') ? (tab as Tab) : 'enterprise';
  const filters: readonly string[] = t === 'invoices' ? INVOICE_FILTERS : REVIEW_FILTERS;
  return {
    tab: t,
    status: filters.includes(status ?? '') ? (status as ReviewFilter | InvoiceFilter) : 'Pending',
    q: p.get('q')?.trim().slice(0, 50) ?? '',
    ...readPaging(p),
  };
}

function writeQuery(v: OperatorQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (v.tab !== 'enterprise') p.set('tab', v.tab);
  if (v.status !== 'Pending') p.set('status', v.status);
  if (v.q) p.set('q', v.q);
  return writePaging(v, p);
}

/** /operator: the operator's reviews (enterprise certification, student verification), invoice requests, users, the decision log, the model square's models and channels, and the registered images (镜像登记). */
export default function OperatorPage() {
  const url = useUrlState(readQuery, writeQuery);
  const v = url.value;
  useRoleRefreshOnRefusal();
  const set = (patch: Partial<OperatorQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const setPage = (paging: Paging) => url.set({ ...url.latest(), ...paging });

  return (
    <PageFrame>
      <Card>
        <Tabs
          activeKey={v.tab}
          // Each tab starts from its defaults: a filter of one list means nothing to another.
          onChange={(tab) => url.set({ tab: tab as Tab, status: 'Pending', q: '', page: 1, pageSize: v.pageSize })}
          items={[
            { key: 'enterprise', label: '企业认证审核' },
            { key: 'student', label: '学生认证审核' },
            { key: 'invoices', label: '发票' },
            { key: 'users', label: '用户' },
            { key: 'log', label: '审核日志' },
            { key: 'models', label: '模型渠道' },
            { key: 'images', label: '镜像登记' },
          ]}
        />
        {v.tab === 'enterprise' || v.tab === 'student' ? (
          // readQuery keeps the status to the tab's own filters.
          <ReviewQueue key={v.tab} kind={v.tab} status={v.status as ReviewFilter} paging={v} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : v.tab === 'invoices' ? (
          <InvoiceQueue status={v.status as InvoiceFilter} paging={v} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : v.tab === 'users' ? (
          <UserTable q={v.q} paging={v} onSearch={(q) => set({ q })} onPage={setPage} />
        ) : v.tab === 'models' ? (
          <ModelChannelsTab />
        ) : v.tab === 'images' ? (
          <RegisteredImagesTab />
        ) : (
          <ReviewLogTable paging={v} onPage={setPage} />
        )}
      </Card>
    </PageFrame>
  );
}
