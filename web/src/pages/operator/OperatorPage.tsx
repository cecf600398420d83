import { Card, Tabs } from 'antd';
import { PageFrame } from '../../components/PageFrame';
import { useUrlState } from '../../routing/useUrlState';
import { INVOICE_FILTERS, InvoiceQueue, type InvoiceFilter } from './InvoiceQueue';
import { OPERATOR_PAGE_SIZES } from './operatorViews';
import { ReviewLogTable } from './ReviewLogTable';
import { REVIEW_FILTERS, ReviewQueue, type ReviewFilter } from './ReviewQueue';
import { UserTable } from './UserTable';

const TABS = ['enterprise', 'student', 'invoices', 'users', 'log'] as const;
type Tab = (typeof TABS)[number];

export interface OperatorQuery {
  tab: Tab;
  /** Review tabs (a ReviewFilter) and the invoice tab (an InvoiceFilter); 'Pending' by default on both. */
  status: ReviewFilter | InvoiceFilter;
  /** Users tab only: mobile, e-mail or name. */
  q: string;
  page: number;
  pageSize: number;
}

function readQuery(p: URLSearchParams): OperatorQuery {
  const tab = p.get('tab');
  const status = p.get('status');
  const page = Number(p.get('page'));
  const pageSize = Number(p.get('pageSize'));
  const t: Tab = (TABS as readonly string[]).includes(tab ?? '') ? (tab as Tab) : 'enterprise';
  const filters: readonly string[] = t === 'invoices' ? INVOICE_FILTERS : REVIEW_FILTERS;
  return {
    tab: t,
    status: filters.includes(status ?? '') ? (status as ReviewFilter | InvoiceFilter) : 'Pending',
    q: p.get('q')?.trim().slice(0, 50) ?? '',
    page: Number.isInteger(page) && page > 0 ? page : 1,
    pageSize: OPERATOR_PAGE_SIZES.includes(pageSize) ? pageSize : 10,
  };
}

function writeQuery(v: OperatorQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (v.tab !== 'enterprise') p.set('tab', v.tab);
  if (v.status !== 'Pending') p.set('status', v.status);
  if (v.q) p.set('q', v.q);
  if (v.page > 1) p.set('page', String(v.page));
  if (v.pageSize !== 10) p.set('pageSize', String(v.pageSize));
  return p;
}

/** /operator: the operator's reviews (enterprise certification, student verification), invoice requests, users and the decision log. */
export default function OperatorPage() {
  const url = useUrlState(readQuery, writeQuery);
  const v = url.value;
  const set = (patch: Partial<OperatorQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const setPage = (page: number, pageSize: number) => url.set({ ...url.latest(), page, pageSize });

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
          ]}
        />
        {v.tab === 'enterprise' || v.tab === 'student' ? (
          // readQuery keeps the status to the tab's own filters.
          <ReviewQueue key={v.tab} kind={v.tab} status={v.status as ReviewFilter} page={v.page} pageSize={v.pageSize} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : v.tab === 'invoices' ? (
          <InvoiceQueue status={v.status as InvoiceFilter} page={v.page} pageSize={v.pageSize} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : v.tab === 'users' ? (
          <UserTable q={v.q} page={v.page} pageSize={v.pageSize} onSearch={(q) => set({ q })} onPage={setPage} />
        ) : (
          <ReviewLogTable page={v.page} pageSize={v.pageSize} onPage={setPage} />
        )}
      </Card>
    </PageFrame>
  );
}
