import {
  API,
  type AuthResult,
  type codeSentSchema,
  type LoginRequest,
  type outboxResponseSchema,
  type registerSchema,
  type SmsCodeRequest,
  type User,
} from '@console/contract';
// Type-only: the contract exports these schemas but not their inferred types.
import type { z } from 'zod';
import { api } from './client';

export type CodeSent = z.infer<typeof codeSentSchema>;
export type RegisterRequest = z.infer<typeof registerSchema>;
export type Outbox = z.infer<typeof outboxResponseSchema>;

export const userApi = {
  sendSmsCode: (body: SmsCodeRequest) => api.post<CodeSent>(API.smsCode, body),
  register: (body: RegisterRequest) => api.post<AuthResult>(API.register, body),
  login: (body: LoginRequest) => api.post<AuthResult>(API.login, body),
  logout: () => api.post<{ ok: true }>(API.logout, undefined, { silent: true }),
  me: (signal?: AbortSignal) => api.get<User>(API.meInfo, undefined, { signal }),
  /** Dev-only: the codes the embedded SMS driver "sent" (newest first). */
  devOutbox: (to: string) => api.get<Outbox>(API.devOutbox, { to }, { silent: true }),
};
