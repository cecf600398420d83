import { API, PAGE, SILENT_CODES, type User } from '@console/contract';
import { isCertified } from '../auth/permissions';
import { session } from '../session/store';
import { ApiError, CLIENT_MESSAGES, isApiError } from './errors';
import { http, type HttpOptions, type Query } from './http';
import { getApiUi, type ApiUi } from './ui';

export interface RequestOptions extends HttpOptions {
  /** Toast on success: true for '操作成功', or a text of its own. */
  successMessage?: boolean | string;
  /** The caller shows failures itself: no toasts (401 still ends the session). */
  silent?: boolean;
}

/** sessionStorage key of the page to return to after certification (spec §5 '去认证'). */
export const CERT_RETURN_KEY = 'certReturnUrl';
export const CERT_PAGE = `${PAGE.account}?tab=checkInfo`;

/** The one way pages call the API (spec §7/§8). Throws ApiError after reacting to it. */
export async function request<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const { successMessage, silent, ...httpOpts } = opts;
  try {
    const result = await http<T>(path, httpOpts);
    if (successMessage) getApiUi().success(typeof successMessage === 'string' ? successMessage : '操作成功');
    return result;
  } catch (e) {
    const error = e instanceof ApiError ? e : new ApiError('network', CLIENT_MESSAGES.network);
    reactToError(error, getApiUi(), { silent });
    throw error;
  }
}

type Opts = Omit<RequestOptions, 'method' | 'params' | 'data'>;
export const api = {
  get: <T,>(path: string, params?: Query, opts?: Opts) => request<T>(path, { ...opts, method: 'GET', params }),
  post: <T,>(path: string, data?: unknown, opts?: Opts) => request<T>(path, { ...opts, method: 'POST', data }),
  put: <T,>(path: string, data?: unknown, opts?: Opts) => request<T>(path, { ...opts, method: 'PUT', data }),
  patch: <T,>(path: string, data?: unknown, opts?: Opts) => request<T>(path, { ...opts, method: 'PATCH', data }),
  delete: <T,>(path: string, data?: unknown, opts?: Opts) => request<T>(path, { ...opts, method: 'DELETE', data }),
};

/** Spec §8, row by row. */
export function reactToError(error: ApiError, ui: ApiUi, { silent = false }: { silent?: boolean } = {}): void {
  if (error.kind === 'canceled') return; // the caller gave up on purpose (unmount, new search)
  if (error.status === 401) return endSession(error, ui);
  if (silent || (error.code !== undefined && SILENT_CODES.includes(error.code))) return;
  if (isApiError(error, 'CERTIFICATION_REQUIRED')) return showRealNameDialog(ui);
  if (isApiError(error, 'UNPAID_ORDER_EXISTS')) {
    return ui.error(
      <span>
        {error.message}
        {'，'}
        <a
          href={PAGE.bill}
          onClick={(e) => {
            e.preventDefault();
            ui.navigate(PAGE.bill);
          }}
        >
          前往账单页处理
        </a>
      </span>,
    );
  }
  if (error.status === 500 || error.status === 502) return ui.error(CLIENT_MESSAGES.server);
  ui.error(error.detail ? `${error.message}：${error.detail}` : error.message);
}

function endSession(error: ApiError, ui: ApiUi) {
  const hadSession = session.getToken() !== null;
  // Without a session nothing ended: a screen still asking after 退出登录 needs no message.
  if (hadSession) ui.error(error.message, 'session-ended');
  session.clear();
  if (ui.isEmbedded()) return ui.postToParent('redirect_login');
  const here = ui.currentUrl();
  if (here.startsWith(PAGE.login)) return;
  // Without a session there was nothing to resume; with one, come back here after logging in.
  ui.navigate(hadSession ? `${PAGE.login}?redirect=${encodeURIComponent(here)}` : PAGE.login);
}

let realNameDialogOpen = false;

/** The real-name gate of spec §5; also opened by the guard before creating a dataset. */
export function showRealNameDialog(ui: ApiUi = getApiUi()): void {
  if (realNameDialogOpen) return; // several gated calls at once show one dialog
  realNameDialogOpen = true;
  ui.confirm({
    title: '提示',
    content: '该操作需要先完成实名认证（个人认证或企业认证），请先完成实名认证。',
    okText: '去认证',
    cancelText: '已认证',
    keyboard: false, // Esc would count as '已认证'
    onOk: () => {
      realNameDialogOpen = false;
      sessionStorage.setItem(CERT_RETURN_KEY, ui.currentUrl());
      ui.navigate(CERT_PAGE);
    },
    onCancel: async () => {
      realNameDialogOpen = false;
      try {
        const me = await http<User>(API.meInfo);
        session.setUser(me);
        if (isCertified(me)) ui.reload();
        else ui.error('您尚未完成实名认证');
      } catch (e) {
        const error = e instanceof ApiError ? e : new ApiError('network', CLIENT_MESSAGES.network);
        reactToError(error, ui);
      }
    },
  });
}
