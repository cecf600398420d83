import {
  API,
  type AuthResult,
  type CertifyInfo,
  type Child,
  type ChildPermissions,
  type EnterpriseCertify,
  type PersonalCertify,
  type ReviewDecision,
  type ReviewItem,
  type StudentVerification,
  type StudentVerificationRequest,
  type operatorUserSchema,
  type reviewLogSchema,
  type childLoginSchema,
} from '@console/contract';
import type { z } from 'zod';
import { api } from './client';
import type { CodeSent } from './user';

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}
export type OperatorUser = z.infer<typeof operatorUserSchema>;
export type ReviewLogEntry = z.infer<typeof reviewLogSchema>;
export type ChildLogin = z.infer<typeof childLoginSchema>;

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
  list: (page: number, pageSize: number) => api.get<Page<Child>>(API.children, { page, pageSize }),
  create: (body: { childName: string; password: string; remark?: string; permissions: ChildPermissions }) => api.post<Child>(API.children, body),
  update: (id: string, body: { remark?: string; disabled?: boolean; permissions?: ChildPermissions }) => api.put<Child>(API.child, { id, ...body }),
  setPassword: (id: string, password: string) => api.put<{ ok: true }>(API.childPassword, { id, password }),
  remove: (id: string) => api.delete<{ ok: true }>(API.child, { id }),
  login: (body: ChildLogin) => api.post<AuthResult>(API.childLogin, body),
};

export const operatorApi = {
  reviews: (params: { kind: 'enterprise' | 'student'; status?: string; page: number; pageSize: number }) => api.get<Page<ReviewItem>>(API.operatorReviews, params),
  decide: (kind: 'enterprise' | 'student', id: string, decision: ReviewDecision) =>
    api.post<{ ok: true }>(API.operatorReview, { kind, id, ...decision }, { successMessage: decision.decision === 'approve' ? '已通过' : '已驳回' }),
  users: (params: { q?: string; page: number; pageSize: number }) => api.get<Page<OperatorUser>>(API.operatorUsers, params),
  log: (page: number, pageSize: number) => api.get<Page<ReviewLogEntry>>(API.operatorReviewLog, { page, pageSize }),
};
