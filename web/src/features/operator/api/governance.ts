import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type AuditEntry,
  type MoneyMove,
  type MoneyMoveResult,
  type MoneyRequest,
  type OperatorAccount,
  type OperatorAccountList,
  type OperatorMe,
  type OperatorRoleChange,
} from '@console/contract';
import { api } from '../../../api/client';
import { OPERATOR_KEYS } from '../../account';

export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
  from?: string;
  to?: string;
}

export const GOVERNANCE_KEYS = {
  me: [...OPERATOR_KEYS.all, 'me'] as const,
  accounts: [...OPERATOR_KEYS.all, 'accounts'] as const,
  audit: (f: AuditFilter, page: number, pageSize: number) => [...OPERATOR_KEYS.all, 'audit', f, page, pageSize] as const,
  requests: (status: string, page: number, pageSize: number) => [...OPERATOR_KEYS.all, 'money-requests', status, page, pageSize] as const,
};

type AuditPage = { items: AuditEntry[]; total: number; page: number; pageSize: number };
type RequestPage = { items: MoneyRequest[]; total: number; page: number; pageSize: number };

/** Roles, the audit log and money requests of the operator area (issue 32). */
export const governanceApi = {
  // Silent: an account without a role simply has none of these tabs.
  me: (signal?: AbortSignal) => api.get<OperatorMe>(API.operatorMe, undefined, { signal, silent: true }),
  accounts: (signal?: AbortSignal) => api.get<OperatorAccountList>(API.operatorAccounts, undefined, { signal }),
  grant: (body: OperatorRoleChange) => api.post<OperatorAccount>(API.operatorRoleGrant, body, { successMessage: '已授予角色' }),
  revoke: (body: OperatorRoleChange) => api.post<OperatorAccount>(API.operatorRoleRevoke, body, { successMessage: '已收回角色' }),
  audit: (f: AuditFilter, page: number, pageSize: number, signal?: AbortSignal) => api.get<AuditPage>(API.operatorAudit, { ...f, page, pageSize }, { signal }),
  requests: (status: string, page: number, pageSize: number, signal?: AbortSignal) =>
    api.get<RequestPage>(API.operatorMoneyRequests, { status: status === 'all' ? undefined : status, page, pageSize }, { signal }),
  move: (body: MoneyMove) => api.post<MoneyMoveResult>(API.operatorMoney, body),
  approve: (id: string) => api.post<MoneyRequest>(API.operatorMoneyRequestApprove, { id }, { successMessage: '已审批通过，资金已入账' }),
  reject: (id: string, reason: string) => api.post<MoneyRequest>(API.operatorMoneyRequestReject, { id, reason }, { successMessage: '已驳回' }),
};

export const governanceQueries = {
  me: () => queryOptions({ queryKey: GOVERNANCE_KEYS.me, queryFn: ({ signal }) => governanceApi.me(signal), retry: false }),
  accounts: () => queryOptions({ queryKey: GOVERNANCE_KEYS.accounts, queryFn: ({ signal }) => governanceApi.accounts(signal) }),
};
