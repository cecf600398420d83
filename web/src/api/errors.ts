import { ERRORS, type ErrorCode, type ErrorName } from '@console/contract';

/** Why a call failed: the server said no (`http`), or it never got a usable answer. */
export type ApiErrorKind = 'http' | 'network' | 'timeout' | 'canceled' | 'protocol' | 'params';

export const CLIENT_MESSAGES = {
  network: '网络异常，请检查网络连接',
  timeout: '请求超时，请稍后重试',
  canceled: '请求已取消',
  protocol: '不支持的请求协议',
  server: '服务器开了个小差，请稍后重试',
} as const;

/** What every failed call throws to its caller. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    /** HTTP status; 0 when no response arrived. */
    readonly status = 0,
    /** 8-digit business code from the error catalogue, when the server sent one. */
    readonly code?: number,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/**
 * Whether `e` is what a failed call throws; given names from the catalogue, whether it carries one
 * of those errors. Codes are compared through the catalogue's names, never as bare numbers.
 */
export function isApiError(e: unknown): e is ApiError;
export function isApiError(e: unknown, ...names: ErrorName[]): e is ApiError & { readonly code: ErrorCode };
export function isApiError(e: unknown, ...names: ErrorName[]): boolean {
  if (!(e instanceof ApiError)) return false;
  return names.length === 0 || names.some((name) => ERRORS[name].code === e.code);
}
