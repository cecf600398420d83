import { errorByCode } from '@console/contract';
import { session } from '../session/store';
import { BASES, type BaseName } from './bases';
import { ApiError, CLIENT_MESSAGES } from './errors';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
type QueryValue = string | number | boolean | null | undefined | readonly (string | number | boolean)[];
export type Query = Record<string, QueryValue>;

export interface HttpOptions {
  method?: Method;
  base?: BaseName;
  /** Query string values. */
  params?: Query;
  /** The body; for GET it is sent as query instead. */
  data?: unknown;
  headers?: Record<string, string>;
  /** Abort from the caller (TanStack Query passes one): reported as '请求已取消'. */
  signal?: AbortSignal;
  /** Overrides the base's timeout. */
  timeout?: number;
}

/**
 * One HTTP call with no UI: builds the URL, adds the token, applies the timeout and turns every
 * failure into an ApiError. The reactions of spec §8 live in client.ts on top of this.
 */
export async function http<T>(path: string, opts: HttpOptions = {}): Promise<T> {
  const method = opts.method ?? 'GET';
  const base = BASES[opts.base ?? 'main'];
  const isGet = method === 'GET';
  const bodyObject = isPlainObject(opts.data) ? { ...opts.data } : undefined;
  const query: Query = { ...opts.params };
  const filled = fillPath(path, [bodyObject, query]);
  if (isGet && bodyObject) Object.assign(query, bodyObject);

  const url = base.url + filled + serializeQuery(query, base.arrayFormat);
  if (!/^https?:$/.test(new URL(url, window.location.href).protocol)) {
    throw new ApiError('protocol', CLIENT_MESSAGES.protocol);
  }

  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  const token = session.getToken();
  if (token && base.sendToken) headers.Authorization = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (!isGet && opts.data !== undefined) {
    if (isRawBody(opts.data)) body = opts.data;
    else {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(bodyObject ?? opts.data);
    }
  }

  // One controller for both our timeout and the caller's abort, told apart by `timedOut`.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeout ?? base.timeout);
  const forwardAbort = () => controller.abort();
  if (opts.signal?.aborted) controller.abort();
  opts.signal?.addEventListener('abort', forwardAbort, { once: true });

  try {
    const res = await fetch(url, { method, headers, body, credentials: 'include', signal: controller.signal });
    const payload = await readBody(res);
    if (!res.ok) throw httpError(res.status, payload);
    return payload as T;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (timedOut) throw new ApiError('timeout', CLIENT_MESSAGES.timeout);
    if (opts.signal?.aborted) throw new ApiError('canceled', CLIENT_MESSAGES.canceled);
    throw new ApiError('network', CLIENT_MESSAGES.network);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', forwardAbort);
  }
}

/**
 * Replaces `:name` placeholders with values taken from the first source that has them, and
 * removes them from that source so they are not sent twice.
 */
export function fillPath(path: string, sources: (Record<string, unknown> | undefined)[]): string {
  return path.replace(/:([A-Za-z_]\w*)/g, (_, name: string) => {
    const source = sources.find((s) => s && s[name] !== undefined && s[name] !== null);
    if (!source) throw new ApiError('params', `请求参数缺失：${name}`);
    const value = source[name];
    delete source[name];
    return encodeURIComponent(String(value));
  });
}

export function serializeQuery(query: Query, arrayFormat: 'comma' | 'repeat'): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      if (arrayFormat === 'repeat') value.forEach((v) => search.append(key, String(v)));
      else search.append(key, value.join(','));
    } else search.append(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

async function readBody(res: Response): Promise<unknown> {
  if (res.status === 204) return undefined;
  const text = await res.text();
  if (!text) return undefined;
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      if (res.ok) throw new ApiError('http', '服务器返回的数据格式不正确', res.status);
      return undefined;
    }
  }
  return text;
}

function httpError(status: number, payload: unknown): ApiError {
  const body = isPlainObject(payload) ? payload : {};
  const code = typeof body.code === 'number' ? body.code : undefined;
  const message = (typeof body.message === 'string' && body.message) || (code !== undefined && errorByCode(code)?.message) || `请求失败（HTTP ${status}）`;
  const detail = typeof body.detail === 'string' && body.detail ? body.detail : undefined;
  return new ApiError('http', message, status, code, detail);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function isRawBody(v: unknown): v is BodyInit {
  return v instanceof FormData || v instanceof Blob || v instanceof URLSearchParams || typeof v === 'string';
}
