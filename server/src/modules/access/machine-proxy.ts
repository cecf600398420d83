/**
 * The reverse proxy into services of a running instance, through their Unix sockets (drivers'
 * `socketOf`), HTTP and WebSocket, served on the machine listener (machine-origin.ts says why not
 * on the console's origin):
 * - `/jupyter/<id>/…`: the notebook (kernels and terminals are WebSockets); the proxy adds the
 *   notebook's own token, so the user never handles it;
 * - `/service/<id>/…`: 自定义服务, whatever the user serves on port 6006 inside the machine (e.g.
 *   TensorBoard), seen from its root (`X-Forwarded-Prefix` says where it is mounted).
 * On the console, the same paths are doors that send the browser there (machineDoorRoutes).
 * The browser brings the machine origin's cookie (owner or permitted child, running machine); the
 * proxy strips it, so code in the machine never sees it. WebSockets are watched by the gate like
 * the web terminal.
 */
import http from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import WebSocket from 'ws';
import { SESSION_COOKIE, type ErrorName } from '@console/contract';
import type { ComputeDriver, MachineApp, MachineService } from '../../drivers/compute/types.js';
import type { EmbeddedComfyApps } from '../../drivers/image-backend/comfy-apps.js';
import type { AppTokens, InstanceService } from '../instances/index.js';
import type { AccessGate } from './gate.js';
import type { MachineOrigins } from './machine-origin.js';
import { AppError } from '../../http/errors.js';
import { keepAlive } from './routes.js';
import { ENTER_PATH } from './machine-origin.js';
import { APP_STARTING_REFRESH_SECONDS, appStartingPage } from './app-starting.js';

/** Headers that describe one hop, not the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host'];
const WS_OWN = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol'];
/**
 * What a service in a machine may not tell the browser: forget the data of its site (cookies are
 * the whole host's, the console's included, when the origin is shared by port), pin HTTPS. Its
 * cookies pass, but never one named like the console's or the machine origin's own.
 */
const NOT_FROM_MACHINES = ['clear-site-data', 'strict-transport-security'];

/** The console's session cookie and the machine origin's: never shown to a service, never set by one. */
function isOurCookie(cookie: string): boolean {
  const name = cookie.trim().split('=', 1)[0]!.trim();
  return name === SESSION_COOKIE || /^(__Host-)?machine-/i.test(name);
}

interface Target {
  instanceId: string;
  /** Opens the service's socket for one connection (null: not listening). */
  socket: () => { path: string; close(): void } | null;
  /** The path inside the service. */
  path: string;
  /** Headers the service is given besides the browser's (the notebook's token). */
  extra: Record<string, string>;
  /** The console session the connection was admitted with ('' for a program's API token). */
  session: string;
  starting: ErrorName;
  /** Request headers the service never sees (the API token). */
  drop?: string[];
  /** Headers added to the service's answers. */
  answerHeaders?: Record<string, string>;
  /** For a program's API token: why its websockets may no longer stay open (the gate's check). */
  lapsed?: () => Promise<string | null>;
  /** An application the machine runs: how it is doing, for the 启动中 page while it does not answer. */
  appState?: MachineApp['state'];
}

interface Mount {
  prefix: '/jupyter' | '/service';
  service: MachineService;
  /** What the user opens, as the console names it. */
  label: string;
  unavailable: ErrorName;
  starting: ErrorName;
  /** Where `/<prefix>/<id>` alone leads. */
  home: string;
  /** The service lives under the prefix itself (the notebook's base URL) or at its root. */
  keepsPrefix: boolean;
}

const MOUNTS: Mount[] = [
  {
    prefix: '/jupyter',
    service: 'jupyter',
    label: 'JupyterLab',
    unavailable: 'JUPYTER_UNAVAILABLE',
    starting: 'JUPYTER_STARTING',
    home: 'tree',
    keepsPrefix: true,
  },
  {
    prefix: '/service',
    service: 'service',
    label: '自定义服务',
    unavailable: 'SERVICE_UNAVAILABLE',
    starting: 'SERVICE_STARTING',
    home: '',
    keepsPrefix: false,
  },
];

declare module 'fastify' {
  interface FastifyRequest {
    machineService?: Target;
  }
}

/** What the doors to the machines' pages and the machines' listener use. */
export interface MachineProxyDeps {
  accessGate: AccessGate;
  machineOrigins: MachineOrigins;
  driver: ComputeDriver;
  instances: Pick<InstanceService, 'accessOf'>;
  /** Programs' API tokens of instances' ComfyUI. */
  appTokens: Pick<AppTokens, 'admit'>;
  /** The ComfyUI of application instances on fleets that do not run applications themselves. */
  comfyApps: EmbeddedComfyApps;
  /** Where the login page sends a browser that is not logged in. */
  publicBaseUrl: string;
}

/** The console's side: `/jupyter/<id>/…` and `/service/<id>/…` lead the browser to the machine origin. */
export async function machineDoorRoutes(app: FastifyInstance, deps: MachineProxyDeps) {
  for (const m of MOUNTS) {
    const door = async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
      const id = instanceIdOf(req, m);
      const { token } = await deps.accessGate.admitBrowser(req, id);
      if (!deps.driver.services?.includes(m.service) || !deps.machineOrigins.reachable) throw new AppError(m.unavailable);
      // Its image lacks the service: said here, before the browser is sent where nothing would answer.
      const missing = missingService(deps, id, m);
      if (missing) return refuseMissing(req, reply, missing, m);
      const mounted = `${m.prefix}/${id}`;
      const rest = req.url.slice(mounted.length);
      const to = rest.startsWith('/') ? `${mounted}${rest}` : `${mounted}/${m.home}`;
      return reply.header('cache-control', 'no-store').redirect(await deps.machineOrigins.entryUrl(token, id, to));
    };
    app.get(`${m.prefix}/:id`, askingToLogIn(deps, door));
    app.get(`${m.prefix}/:id/*`, askingToLogIn(deps, door));
  }
  // The app's door: to the root of the instance's own origin.
  const appDoor = async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const id = req.params.id;
    if (!INSTANCE_ID.test(id)) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在`);
    const { token } = await deps.accessGate.admitBrowser(req, id);
    const access = await deps.instances.accessOf(id);
    if (!access || !opensInBrowser(deps, access) || !deps.machineOrigins.reachable || !deps.machineOrigins.perInstance) throw new AppError('APP_UNAVAILABLE');
    const rest = req.url.slice(`/app/${id}`.length);
    return reply.header('cache-control', 'no-store').redirect(await deps.machineOrigins.entryUrl(token, id, rest.startsWith('/') ? rest : '/'));
  };
  app.get('/app/:id', askingToLogIn(deps, appDoor));
  app.get('/app/:id/*', askingToLogIn(deps, appDoor));
}

/**
 * A page opened without a console session (it ended, or never was): instead of the JSON error, a page
 * that does what the console's own pages do on 401 (spec §8): inside the console's frame it posts
 * `redirect_login` to the parent, on its own it goes to the login page.
 */
function askingToLogIn<R extends FastifyRequest>(deps: MachineProxyDeps, handler: (req: R, reply: FastifyReply) => Promise<unknown>) {
  return async (req: R, reply: FastifyReply) => {
    try {
      return await handler(req, reply);
    } catch (e) {
      if (needsLogin(req, e)) return sendLoginPage(reply, deps);
      throw e;
    }
  };
}

/** A page (not an API call or a socket) refused for want of a console session. */
function needsLogin(req: FastifyRequest, e: unknown): boolean {
  return e instanceof AppError && e.status === 401 && !req.headers.upgrade && String(req.headers.accept ?? '').includes('text/html');
}

function sendLoginPage(reply: FastifyReply, deps: MachineProxyDeps) {
  return reply
    .status(401)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(loginPage(`${deps.publicBaseUrl}/login`));
}

function loginPage(loginUrl: string): string {
  const to = JSON.stringify(loginUrl).replace(/</g, '\\u003c');
  return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>请重新登录</title></head>
<body style="font:14px sans-serif;padding:32px;color:#1f1f1f"><p>控制台登录已失效，请重新登录后再打开。</p><p><a href=${to} target="_top">去登录</a></p>
<script>if (window.parent !== window) window.parent.postMessage('redirect_login', '*'); else location.replace(${to});</script></body></html>`;
}

/** The machine listener's routes: the ticket's entry, and the services. */
export async function machineProxyRoutes(app: FastifyInstance, deps: MachineProxyDeps) {
  // Bodies pass through untouched (uploads, notebook JSON).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  app.addHook('onSend', async (_req, reply) => {
    if (!reply.hasHeader('x-content-type-options')) reply.header('x-content-type-options', 'nosniff');
  });
  app.get<{ Querystring: { ticket?: string } }>(ENTER_PATH, async (req, reply) => {
    const origins = deps.machineOrigins;
    const entry = await origins.redeem(String(req.query.ticket ?? ''));
    // A ticket of one instance is never traded under another's host.
    if (!origins.isOriginOf(req.host, entry.instanceId)) throw new AppError('UNAUTHENTICATED', '链接与实例不符：请回到控制台重新打开');
    await deps.accessGate.admitBrowser(req, entry.instanceId, entry.token);
    reply.setCookie(origins.cookieName(entry.instanceId), entry.cookie, { httpOnly: true, sameSite: 'lax', path: '/', secure: origins.secure });
    return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').redirect(entry.to);
  });
  for (const m of MOUNTS) mountService(app, deps, m);
  mountApp(app, deps);
}

const INSTANCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The instance a machine path names, written as the console writes it (lower case, not encoded). */
function instanceIdOf(req: FastifyRequest<{ Params: { id: string } }>, m: Mount): string {
  const id = req.params.id;
  if (!INSTANCE_ID.test(id) || !req.url.startsWith(`${m.prefix}/${id}`)) throw new AppError('RECORD_NOT_FOUND', `实例 ${id} 不存在`);
  return id;
}

function mountService(app: FastifyInstance, deps: MachineProxyDeps, m: Mount) {
  const driver = deps.driver;
  const admit = async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const id = instanceIdOf(req, m);
    // Each instance under its own host only: another instance's page never reaches this one's service.
    if (!deps.machineOrigins.isOriginOf(req.host, id)) throw new AppError('NOT_FOUND', `${req.method} ${req.url.split('?')[0]}`);
    let token: string;
    try {
      token = await deps.machineOrigins.sessionOf(req.cookies?.[deps.machineOrigins.cookieName(id)], id);
    } catch (e) {
      // A page opened without a valid cookie (a bookmark, another browser, a new login): the console's door issues one.
      if (req.method === 'GET' && !req.headers.upgrade) return reply.header('cache-control', 'no-store').redirect(`${deps.publicBaseUrl}${req.url}`);
      throw e;
    }
    const { token: session } = await deps.accessGate.admitBrowser(req, id, token);
    const access = await deps.instances.accessOf(id);
    if (!driver.services?.includes(m.service) || !access) throw new AppError(m.unavailable);
    const missing = missingService(deps, id, m);
    if (missing) return refuseMissing(req, reply, missing, m);
    const socket = () => driver.socketOf!(id, m.service);
    const mounted = `${m.prefix}/${id}`;
    const path = m.keepsPrefix ? req.url : req.url.slice(mounted.length) || '/';
    const extra: Record<string, string> = m.service === 'jupyter' ? { authorization: `token ${access.jupyterToken}` } : { 'x-forwarded-prefix': mounted };
    req.machineService = { instanceId: id, socket, path, extra, session, starting: m.starting };
  };

  app.get<{ Params: { id: string } }>(`${m.prefix}/:id`, async (req, reply) => reply.redirect(`${m.prefix}/${instanceIdOf(req, m)}/${m.home}`));
  app.route<{ Params: { id: string } }>({
    method: 'GET',
    url: `${m.prefix}/:id/*`,
    preHandler: admit,
    handler: (req, reply) => forward(req, reply),
    wsHandler: (socket, req) => relay(socket, req, deps),
  });
  app.route<{ Params: { id: string } }>({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: `${m.prefix}/:id/*`,
    preHandler: admit,
    handler: (req, reply) => forward(req, reply),
  });
}

/**
 * Why the running machine does not offer the mount's service (its image lacks the programs, and
 * which images have them: ComputeDriver.serviceMissing), as the mount's error; null: it does, or
 * the driver cannot tell. Without it the service would never answer and the user would wait on
 * the 启动中 error for nothing.
 */
function missingService(deps: MachineProxyDeps, instanceId: string, m: Mount): AppError | null {
  const why = deps.driver.serviceMissing?.(instanceId, m.service);
  return why ? new AppError(m.unavailable, why) : null;
}

/** A page is told in a page of its own (what is missing, what to do); an API call or a socket gets the error. */
function refuseMissing(req: FastifyRequest, reply: FastifyReply, e: AppError, m: Mount) {
  const page = req.method === 'GET' && !req.headers.upgrade && String(req.headers.accept ?? '').includes('text/html');
  if (!page) throw e;
  return reply.status(e.status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(missingPage(m.label, e));
}

function missingPage(label: string, e: AppError): string {
  const { message, detail, code } = e.body();
  return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>无法打开${escapeHtml(label)}</title></head>
<body style="font:14px sans-serif;padding:32px;color:#1f1f1f;max-width:720px"><h1 style="font-size:18px">无法打开${escapeHtml(label)}</h1>
<p>${escapeHtml(detail ?? message)}</p><p style="color:#8c8c8c">错误码 ${code}：${escapeHtml(message)}</p></body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * An application instance's app (镜像应用: the application its machine serves on its port, or the
 * embedded ComfyUI), at the root of the instance's own origin (ComfyUI asks for `/prompt`, `/ws`…
 * and applications cannot live under a prefix): per-instance origins only. While the application
 * does not answer yet, a page gets the 启动中 page (app-starting.ts) instead of an error.
 */
function mountApp(app: FastifyInstance, deps: MachineProxyDeps) {
  const admit = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = deps.machineOrigins.instanceOfHost(req.host);
    const presented = apiTokenOf(req);
    if (presented !== null) return admitProgram(req, deps, presented, id);
    if (!id) throw new AppError('NOT_FOUND', `${req.method} ${req.url.split('?')[0]}`);
    let token: string;
    try {
      token = await deps.machineOrigins.sessionOf(req.cookies?.[deps.machineOrigins.cookieName(id)], id);
    } catch (e) {
      if (req.method === 'GET' && !req.headers.upgrade) return reply.header('cache-control', 'no-store').redirect(`${deps.publicBaseUrl}/app/${id}${req.url}`);
      throw e;
    }
    let session: string;
    try {
      ({ token: session } = await deps.accessGate.admitBrowser(req, id, token));
    } catch (e) {
      if (needsLogin(req, e)) return sendLoginPage(reply, deps);
      throw e;
    }
    req.machineService = { instanceId: id, ...(await appOf(deps, id)), path: req.url, extra: {}, session, starting: 'APP_STARTING' };
  };
  const wildcard = (req: FastifyRequest, reply: FastifyReply) => forward(req, reply).catch((e: unknown) => startingPage(req, reply, e));
  app.route({ method: 'GET', url: '/*', preHandler: admit, handler: wildcard, wsHandler: (socket, req) => relay(socket, req, deps) });
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: '/*', preHandler: admit, handler: wildcard });
}

/**
 * A program with the instance's API token (app-token.ts): `Authorization: Bearer <token>`, or
 * `?token=` where it cannot set headers (a browser's websocket). Checked on every request, and its
 * websockets watched by the gate like a browser's. The token names its instance, so a program may
 * also come to a host that is not the instance's own (where `*.localhost` does not resolve for it);
 * nothing answered there may run as a page, since that host is shared with other instances.
 */
async function admitProgram(req: FastifyRequest, deps: MachineProxyDeps, presented: string, hostId: string | null) {
  const { instanceId } = await deps.appTokens.admit(presented, hostId);
  const app = await appOf(deps, instanceId);
  const lapsed = async () => {
    try {
      const grant = await deps.appTokens.admit(presented, hostId);
      return hasBrowserApp(grant) ? null : '实例已不在运行中，连接已关闭';
    } catch (e) {
      return e instanceof AppError ? `${e.message}，连接已关闭` : null; // a database hiccup: the next look decides
    }
  };
  req.machineService = {
    instanceId,
    ...app,
    path: withoutToken(req.url),
    extra: {},
    session: '',
    starting: 'APP_STARTING',
    drop: ['authorization'],
    answerHeaders: { 'x-content-type-options': 'nosniff', ...(hostId === null ? { 'content-security-policy': 'sandbox' } : {}) },
    lapsed,
  };
}

/** The API token a request presents, or null when it presents none. */
function apiTokenOf(req: FastifyRequest): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^bearer\s/i.test(auth)) return auth.slice('bearer'.length).trim();
  const query = req.url.indexOf('?');
  if (query < 0) return null;
  return new URLSearchParams(req.url.slice(query + 1)).get('token');
}

/** The request's path and query without the token (the service never sees it). */
function withoutToken(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const params = new URLSearchParams(url.slice(query + 1));
  params.delete('token');
  const rest = params.toString();
  return rest ? `${url.slice(0, query)}?${rest}` : url.slice(0, query);
}

/**
 * The instance's app, when it has one that runs now: the application its machine runs (a driver
 * that runs applications: the image's command on its port), else the embedded ComfyUI of these fleets.
 */
async function appOf(deps: MachineProxyDeps, instanceId: string): Promise<Pick<Target, 'socket' | 'appState'>> {
  const access = await deps.instances.accessOf(instanceId);
  const machineApp = access ? machineAppOf(deps, access) : null;
  if (machineApp) return { socket: () => machineApp.socket(), appState: () => machineApp.state() };
  if (!access || !hasBrowserApp(access)) {
    await deps.comfyApps.stop(instanceId);
    throw new AppError('APP_UNAVAILABLE');
  }
  const path = await deps.comfyApps.socketOf(instanceId);
  return { socket: () => ({ path, close: () => {} }) };
}

type AppAccess = { id: string; applicationId: string | null; status: string };

/** The application the running instance's machine serves (ComputeDriver.app), if it is an application instance. */
function machineAppOf(deps: MachineProxyDeps, a: AppAccess): MachineApp | null {
  return a.applicationId !== null && a.status === 'Running' ? (deps.driver.app?.(a.id) ?? null) : null;
}

/** Whether the instance has an app 打开应用 opens now: the one its machine runs, or the embedded ComfyUI. */
function opensInBrowser(deps: MachineProxyDeps, a: AppAccess): boolean {
  return machineAppOf(deps, a) !== null || hasBrowserApp(a);
}

/** The embedded ComfyUI's instances: ComfyUI, on a running instance. */
export function hasBrowserApp(a: { applicationId: string | null; status: string }): boolean {
  return a.applicationId === 'comfyui' && a.status === 'Running';
}

/**
 * A page of an application that does not answer on its port yet (starting, or exited and about to
 * start again): the 启动中 page, which reloads itself until the application answers. Anything else
 * (an API call, a socket, a service's own error) keeps its error.
 */
async function startingPage(req: FastifyRequest, reply: FastifyReply, e: unknown): Promise<unknown> {
  const state = req.machineService?.appState;
  const page = req.method === 'GET' && !req.headers.upgrade && String(req.headers.accept ?? '').includes('text/html');
  if (!state || !page || !(e instanceof AppError) || !e.is('APP_STARTING')) throw e;
  const now = await state();
  if (!now) throw e;
  return reply
    .status(503)
    .header('cache-control', 'no-store')
    .header('retry-after', String(APP_STARTING_REFRESH_SECONDS))
    .type('text/html; charset=utf-8')
    .send(appStartingPage(now));
}

function upstreamHeaders(req: FastifyRequest, t: Target, drop: string[] = []): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  const dropped = [...drop, ...(t.drop ?? [])];
  for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.includes(k) && !dropped.includes(k) && v !== undefined) headers[k] = v;
  const cookie = (req.headers.cookie ?? '')
    .split(';')
    .map((c) => c.trim())
    .filter((c) => c && !isOurCookie(c))
    .join('; ');
  if (cookie) headers.cookie = cookie;
  else delete headers.cookie;
  Object.assign(headers, t.extra);
  // The notebook compares Origin with Host: it must see the console's host.
  headers.host = req.headers.host ?? 'localhost';
  return headers;
}

/** One HTTP request to the service and its answer, streamed both ways. */
function forward(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const t = req.machineService!;
  const socket = t.socket();
  if (!socket) return Promise.reject(new AppError(t.starting));
  return new Promise((resolve, reject) => {
    const upstream = http.request({ socketPath: socket.path, method: req.method, path: t.path, headers: upstreamHeaders(req, t) });
    upstream.once('socket', (s) => s.once('connect', () => socket.close()));
    upstream.once('response', (res) => {
      reply.hijack();
      const headers = { ...res.headers };
      for (const h of [...HOP_BY_HOP, ...NOT_FROM_MACHINES]) delete headers[h];
      if (headers['set-cookie']) headers['set-cookie'] = headers['set-cookie'].filter((c) => !isOurCookie(c));
      Object.assign(headers, t.answerHeaders);
      // A status a browser cannot take (the service may answer anything) is a bad gateway.
      const status = res.statusCode && res.statusCode >= 100 && res.statusCode <= 599 ? res.statusCode : 502;
      try {
        reply.raw.writeHead(status, headers);
      } catch {
        res.destroy();
        reply.raw.destroy();
        return resolve();
      }
      res.pipe(reply.raw);
      res.once('end', () => resolve());
      res.once('error', () => reply.raw.destroy());
    });
    // The browser left: so does the request to the service (a stream, a long poll).
    reply.raw.once('close', () => upstream.destroy());
    // Not listening yet (it starts with the machine) or gone: the user should retry in a moment.
    upstream.once('error', () => {
      socket.close();
      if (reply.sent) resolve();
      else reject(new AppError(t.starting));
    });
    const body = req.body as Readable | undefined;
    if (body && typeof body.pipe === 'function') {
      body.pipe(upstream);
      // The service answered before taking the whole body (a 413): the rest is read and dropped, so the
      // sender gets to its answer and the connection does not stay half-read.
      upstream.once('close', () => {
        if (body.readableEnded) return;
        body.unpipe(upstream);
        body.resume();
      });
    } else upstream.end();
  });
}

/** A WebSocket of the service (the notebook's kernel channels and terminals), message by message. */
function relay(client: WebSocket, req: FastifyRequest, deps: MachineProxyDeps) {
  const t = req.machineService!;
  const socket = t.socket();
  if (!socket) return client.close(1011, 'service unavailable');
  const protocols = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  keepAlive(client);
  const upstream = serviceSocket(`ws+unix://${socket.path}:${t.path}`, protocols, upstreamHeaders(req, t, WS_OWN) as Record<string, string>);
  const live = {
    token: t.session,
    instanceId: t.instanceId,
    close: () => {
      client.close(4403, 'access ended');
      upstream.terminate();
    },
    ...(t.lapsed ? { lapsed: t.lapsed } : {}),
  };
  deps.accessGate.watch(live);
  upstream.once('close', () => socket.close());
  upstream.once('open', () => socket.close());
  pairSockets(client, upstream);
  client.on('close', () => {
    deps.accessGate.forget(live);
    upstream.terminate();
  });
}

/**
 * The largest message either way: the browser side's own limit (the machines' listener), above the notebook's
 * (tornado's 10 MiB) and ComfyUI's previews. A service's bigger frame ends its socket before it is held whole.
 */
export const WS_MAX_MESSAGE = 16 * 1024 * 1024;
/** Messages of the browser held while the service's handshake is pending, at most. */
export const WS_WAITING_MAX = 4 * 1024 * 1024;
/** Queued for a slow reader above which the other side is no longer read, and below which it is again. */
const WS_HIGH_WATER = 1024 * 1024;
const WS_LOW_WATER = 128 * 1024;

/** The console's socket to a service: no compression to inflate, no message over the limit held. */
export function serviceSocket(url: string, protocols: string[] = [], headers: Record<string, string> = {}): WebSocket {
  return new WebSocket(url, protocols, { headers, perMessageDeflate: false, maxPayload: WS_MAX_MESSAGE });
}

/**
 * Relays messages between the browser's socket and the service's, holding neither side's flood in the
 * console's memory: what the browser sends before the service answers is kept up to WS_WAITING_MAX (then
 * the browser is told to retry, 1013), and a side that does not read holds the other side's reading.
 */
export function pairSockets(client: WebSocket, upstream: WebSocket): void {
  const waiting: [WebSocket.RawData, boolean][] = [];
  let waitingBytes = 0;
  client.on('message', (data, binary) => {
    if (upstream.readyState === WebSocket.OPEN) return passOn(client, upstream, data, binary);
    if (upstream.readyState !== WebSocket.CONNECTING) return;
    waitingBytes += rawLength(data);
    if (waitingBytes > WS_WAITING_MAX) {
      waiting.length = 0;
      client.close(1013, 'service not ready');
      return upstream.terminate();
    }
    waiting.push([data, binary]);
  });
  upstream.on('open', () => {
    for (const [data, binary] of waiting.splice(0)) passOn(client, upstream, data, binary);
    waitingBytes = 0;
  });
  upstream.on('message', (data, binary) => passOn(upstream, client, data, binary));
  upstream.on('close', () => client.close());
  upstream.on('error', () => client.close(1011, 'service unavailable'));
  client.on('close', () => upstream.terminate());
}

/** Sends one message on; while the receiving side's queue is long, the sending side is not read. */
function passOn(from: WebSocket, to: WebSocket, data: WebSocket.RawData, binary: boolean) {
  if (to.readyState !== WebSocket.OPEN) return;
  to.send(data, { binary }, () => {
    if (from.isPaused && to.bufferedAmount < WS_LOW_WATER) from.resume();
  });
  if (to.bufferedAmount > WS_HIGH_WATER) from.pause();
}

function rawLength(data: WebSocket.RawData): number {
  return Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength;
}
