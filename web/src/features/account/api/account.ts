import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type AuthResult,
  type CertifyInfo,
  type Child,
  type ChildPermissions,
  type EnterpriseCertify,
  type PersonalCertify,
  type ReviewDecision,
  type StudentVerification,
  type StudentVerificationRequest,
  type ChildLogin,
  type ChildPage,
  type CodeSent,
  type OperatorUserPage,
  type ReviewItemPage,
  type ReviewLogPage,
  type SpendLimit,
  type SshKey,
  type SshKeyCreate,
} from '@console/contract';
import { api } from '../../../api/client';

/** Query keys of the account center: certification, student verification, child accounts and SSH keys. */
export const ACCOUNT_KEYS = {
  certify: ['certify'] as const,
  student: ['student'] as const,
  children: ['children'] as const,
  childList: (page: number, pageSize: number) => ['children', 'list', page, pageSize] as const,
  sshKeys: ['sshKeys'] as const,
};

/** Everything the operator area reads; a decision invalidates all of it (queue, users, log). */
export const OPERATOR_KEYS = {
  all: ['operator'] as const,
  reviews: (kind: string, status: string, page: number, pageSize: number) => ['operator', 'reviews', kind, status, page, pageSize] as const,
  users: (q: string, page: number, pageSize: number) => ['operator', 'users', q, page, pageSize] as const,
  log: (page: number, pageSize: number) => ['operator', 'log', page, pageSize] as const,
  invoices: (status: string, page: number, pageSize: number) => ['operator', 'invoices', status, page, pageSize] as const,
};

function imageForm(file: File): FormData {
  const form = new FormData();
  form.append('file', file);
  return form;
}

/** Real-name certification (spec §7). */
export const certifyApi = {
  info: () => api.get<CertifyInfo>(API.certifyInfo),
  submitPersonal: (body: PersonalCertify) => api.post<CertifyInfo>(API.certifyPersonal, body),
  confirmPersonal: () => api.post<CertifyInfo>(API.certifyPersonalConfirm),
  submitEnterprise: (body: EnterpriseCertify) => api.post<CertifyInfo>(API.certifyEnterprise, body),
  uploadLicence: (file: File) => api.put<CertifyInfo>(API.certifyEnterpriseUpload, imageForm(file)),
  confirmEnterprise: () => api.post<CertifyInfo>(API.certifyEnterpriseConfirm),
};

/** Student verification (spec §7). */
export const studentApi = {
  get: () => api.get<StudentVerification>(API.student),
  sendEmailCode: (email: string) => api.post<CodeSent>(API.studentEmailCode, { email }),
  uploadImage: (file: File) => api.put<StudentVerification>(API.studentImage, imageForm(file)),
  submit: (body: StudentVerificationRequest) => api.post<StudentVerification>(API.student, body),
};

export const childApi = {
  list: (page: number, pageSize: number) => api.get<ChildPage>(API.children, { page, pageSize }),
  /** For pickers that simply offer no children when the list cannot be read. */
  listSilent: (page: number, pageSize: number, signal?: AbortSignal) => api.get<ChildPage>(API.children, { page, pageSize }, { signal, silent: true }),
  create: (body: { childName: string; password: string; remark?: string; permissions: ChildPermissions; spendLimit?: SpendLimit | null }) =>
    api.post<Child>(API.children, body),
  update: (id: string, body: { remark?: string; disabled?: boolean; permissions?: ChildPermissions; spendLimit?: SpendLimit | null }) =>
    api.put<Child>(API.child, { id, ...body }),
  setPassword: (id: string, password: string) => api.put<{ ok: true }>(API.childPassword, { id, password }),
  remove: (id: string) => api.delete<{ ok: true }>(API.child, { id }),
  login: (body: ChildLogin) => api.post<AuthResult>(API.childLogin, body),
};

/** SSH 公钥 (账号中心): keys that log into the instances the user may manage, without their password. */
export const sshKeyApi = {
  /** The tab shows a failed list itself (加载失败 with 重试). */
  list: (signal?: AbortSignal) => api.get<{ items: SshKey[] }>(API.meSshKeys, undefined, { signal, silent: true }),
  /** Quiet: the dialog shows a refused key under the field (SSH_KEY_INVALID / SSH_KEY_DUPLICATE) and passes the rest on. */
  add: (body: SshKeyCreate) => api.post<SshKey>(API.meSshKeys, body, { silent: true, successMessage: `公钥「${body.name}」已添加` }),
  remove: (id: string) => api.delete<{ ok: true }>(API.meSshKey, { id }, { successMessage: '公钥已删除' }),
};

export const operatorApi = {
  reviews: (params: { kind: 'enterprise' | 'student'; status?: string; page: number; pageSize: number }) =>
    api.get<ReviewItemPage>(API.operatorReviews, params),
  decide: (kind: 'enterprise' | 'student', id: string, decision: ReviewDecision) =>
    api.post<{ ok: true }>(API.operatorReview, { kind, id, ...decision }, { successMessage: decision.decision === 'approve' ? '已通过' : '已驳回' }),
  users: (params: { q?: string; page: number; pageSize: number }) => api.get<OperatorUserPage>(API.operatorUsers, params),
  log: (page: number, pageSize: number) => api.get<ReviewLogPage>(API.operatorReviewLog, { page, pageSize }),
};

/** One factory per endpoint read by the pages: key and request travel together. */
export const accountQueries = {
  certify: () => queryOptions({ queryKey: ACCOUNT_KEYS.certify, queryFn: () => certifyApi.info() }),
  student: () => queryOptions({ queryKey: ACCOUNT_KEYS.student, queryFn: () => studentApi.get() }),
  children: (page: number, pageSize: number) =>
    queryOptions({ queryKey: ACCOUNT_KEYS.childList(page, pageSize), queryFn: () => childApi.list(page, pageSize) }),
  /** A key of its own: a failure here must not be shown as the children tab's failure. */
  childrenSilent: (page: number, pageSize: number) =>
    queryOptions({ queryKey: [...ACCOUNT_KEYS.childList(page, pageSize), 'silent'], queryFn: ({ signal }) => childApi.listSilent(page, pageSize, signal) }),
  sshKeys: () => queryOptions({ queryKey: ACCOUNT_KEYS.sshKeys, queryFn: ({ signal }) => sshKeyApi.list(signal) }),
};
