import { Card, Tabs } from 'antd';
import { useQuery } from '@tanstack/react-query';
import type { OperatorPermission } from '@console/contract';
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
import { governanceQueries, type AuditFilter } from '../api/governance';
import { ApprovalsTab, REQUEST_FILTERS, type RequestFilter } from '../components/ApprovalsTab';
import { AuditLogTab } from '../components/AuditLogTab';
import { RolesTab } from '../components/RolesTab';

const TABS = ['enterprise', 'student', 'invoices', 'users', 'log', 'models', 'images', 'approvals', 'roles', 'audit'] as const;
type Tab = (typeof TABS)[number];

export interface OperatorQuery extends Paging {
  tab: Tab;
  /** Review tabs (a ReviewFilter) and the invoice tab (an InvoiceFilter); 'Pending' by default on both. */
  status: ReviewFilter | InvoiceFilter;
  /** Users tab only: mobile, e-mail or name. */
  q: string;
  /** 审计日志 only. */
  audit: AuditFilter;
  /** 待审批 only. */
  requests: RequestFilter;
}

const AUDIT_FIELDS = ['actor', 'action', 'target', 'from', 'to'] as const;
/** The tabs of issue 32, shown to whoever holds one of the permissions (the server checks each request again). */
const NEEDS: Partial<Record<Tab, readonly OperatorPermission[]>> = {
  approvals: ['money.approve', 'money.credit', 'money.creditSmall'],
  roles: ['roles.manage'],
  audit: ['audit.read'],
};

function readQuery(p: URLSearchParams): OperatorQuery {
  const tab = p.get('tab');
  const status = p.get('status');
  const t: Tab = (TABS as readonly string[]).includes(tab ?? '') ? (tab as Tab) : 'enterprise';
  const filters: readonly string[] = t === 'invoices' ? INVOICE_FILTERS : REVIEW_FILTERS;
  return {
    tab: t,
    status: filters.includes(status ?? '') ? (status as ReviewFilter | InvoiceFilter) : 'Pending',
    q: p.get('q')?.trim().slice(0, 50) ?? '',
    audit: Object.fromEntries(AUDIT_FIELDS.flatMap((k) => (p.get(k) ? [[k, p.get(k)!.slice(0, 100)]] : []))),
    requests: (REQUEST_FILTERS as readonly string[]).includes(p.get('requests') ?? '') ? (p.get('requests') as RequestFilter) : 'pending',
    ...readPaging(p),
  };
}

function writeQuery(v: OperatorQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (v.tab !== 'enterprise') p.set('tab', v.tab);
  if (v.status !== 'Pending') p.set('status', v.status);
  if (v.q) p.set('q', v.q);
  for (const k of AUDIT_FIELDS) if (v.audit[k]) p.set(k, v.audit[k]);
  if (v.requests !== 'pending') p.set('requests', v.requests);
  return writePaging(v, p);
}

/** /operator: the operator's reviews (enterprise certification, student verification), invoice requests, users, the decision log, the model square's models and channels, the registered images (镜像登记), and — by role — money requests awaiting a second operator (待审批), roles (角色与权限) and the audit log (审计日志). */
export default function OperatorPage() {
  const url = useUrlState(readQuery, writeQuery);
  const v = url.value;
  useRoleRefreshOnRefusal();
  const set = (patch: Partial<OperatorQuery>) => url.set({ ...url.latest(), page: 1, ...patch });
  const setPage = (paging: Paging) => url.set({ ...url.latest(), ...paging });
  const me = useQuery(governanceQueries.me());
  const allowed = (tab: Tab) => !NEEDS[tab] || NEEDS[tab].some((p) => me.data?.permissions.includes(p));
  const tab: Tab = allowed(v.tab) ? v.tab : 'enterprise';

  return (
    <PageFrame>
      <Card>
        <Tabs
          activeKey={tab}
          // Each tab starts from its defaults: a filter of one list means nothing to another.
          onChange={(next) => url.set({ tab: next as Tab, status: 'Pending', q: '', audit: {}, requests: 'pending', page: 1, pageSize: v.pageSize })}
          items={[
            { key: 'enterprise', label: '企业认证审核' },
            { key: 'student', label: '学生认证审核' },
            { key: 'invoices', label: '发票' },
            { key: 'users', label: '用户' },
            { key: 'log', label: '审核日志' },
            { key: 'models', label: '模型渠道' },
            { key: 'images', label: '镜像登记' },
            { key: 'approvals', label: '待审批' },
            { key: 'roles', label: '角色与权限' },
            { key: 'audit', label: '审计日志' },
          ].filter((t) => allowed(t.key as Tab))}
        />
        {tab === 'approvals' && me.data ? (
          <ApprovalsTab me={me.data} status={v.requests} paging={v} onStatus={(requests) => set({ requests })} onPage={setPage} />
        ) : tab === 'roles' && me.data ? (
          <RolesTab myUserId={me.data.userId} />
        ) : tab === 'audit' ? (
          <AuditLogTab filter={v.audit} paging={v} onFilter={(audit) => set({ audit })} onPage={setPage} />
        ) : tab === 'enterprise' || tab === 'student' ? (
          // readQuery keeps the status to the tab's own filters.
          <ReviewQueue key={tab} kind={tab} status={v.status as ReviewFilter} paging={v} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : tab === 'invoices' ? (
          <InvoiceQueue status={v.status as InvoiceFilter} paging={v} onStatus={(status) => set({ status })} onPage={setPage} />
        ) : tab === 'users' ? (
          <UserTable q={v.q} paging={v} onSearch={(q) => set({ q })} onPage={setPage} />
        ) : tab === 'models' ? (
          <ModelChannelsTab />
        ) : tab === 'images' ? (
          <RegisteredImagesTab />
        ) : (
          <ReviewLogTable paging={v} onPage={setPage} />
        )}
      </Card>
    </PageFrame>
  );
}
