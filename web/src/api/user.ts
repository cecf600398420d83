import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type AuthResult,
  type BalanceFloor,
  type CodeSent,
  type LoginRequest,
  type OutboxResponse,
  type RegisterRequest,
  type SmsCodeRequest,
  type User,
  type UserInfo,
} from '@console/contract';
import { api } from './client';

/** Query keys: me/info, one per session token (another login must not see the last one's user). */
export const USER_KEYS = {
  me: ['me'] as const,
  balanceFloor: ['balanceFloor'] as const,
  meOf: (token: string | null) => ['me', token] as const,
};

export const userApi = {
  sendSmsCode: (body: SmsCodeRequest) => api.post<CodeSent>(API.smsCode, body),
  register: (body: RegisterRequest) => api.post<AuthResult>(API.register, body),
  login: (body: LoginRequest) => api.post<AuthResult>(API.login, body),
  /** 忘记密码: sets a new password with an SMS code (scene reset) and ends every session of the account. */
  resetPassword: (body: { mobile: string; code: string; password: string }) => api.post<{ ok: true }>(API.passwordReset, body),
  logout: () => api.post<{ ok: true }>(API.logout, undefined, { silent: true }),
  /** The user with the payer's money fields of spec §3 (cash, gift remain, expiry, renewal, items). */
  me: (signal?: AbortSignal) => api.get<UserInfo>(API.meInfo, undefined, { signal }),
  sendEmailCode: (email: string) => api.post<CodeSent>(API.emailCode, { email, scene: 'email' }),
  changePassword: (body: { oldPassword: string; password: string }) => api.put<{ ok: true }>(API.mePassword, body, { successMessage: '密码已修改' }),
  changeMobile: (body: { mobile: string; code: string }) => api.put<User>(API.meMobile, body, { successMessage: '手机号已更换' }),
  changeEmail: (body: { email: string; code: string }) => api.put<User>(API.meEmail, body, { successMessage: '邮箱已绑定' }),
  uploadLogo: (file: File) => {
    const form = new FormData();
    form.append('file', file);
    return api.put<User>(API.meLogo, form, { successMessage: '头像已更新' });
  },
  /** 余额保底 (main accounts): running post-paid instances stop when the balance falls below it. */
  balanceFloor: (signal?: AbortSignal) => api.get<BalanceFloor>(API.meBalanceFloor, undefined, { signal }),
  /** Sets the floor (0.0001 yuan units) or turns it off with null. */
  setBalanceFloor: (floor: string | null) =>
    api.put<BalanceFloor>(API.meBalanceFloor, { floor }, { successMessage: floor === null ? '已关闭余额保底' : '余额保底已保存' }),
  /** Dev-only: the codes the embedded SMS driver "sent" (newest first). */
  devOutbox: (to: string) => api.get<OutboxResponse>(API.devOutbox, { to }, { silent: true }),
};

export const userQueries = {
  balanceFloor: () => queryOptions({ queryKey: USER_KEYS.balanceFloor, queryFn: ({ signal }) => userApi.balanceFloor(signal) }),
};
