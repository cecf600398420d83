/**
 * The HTTP server: one Fastify instance serving the API and the built console.
 */
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import fastifyWebsocket from '@fastify/websocket';
import fastifyMultipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API, ERRORS, healthDownSchema, healthOkSchema } from '@console/contract';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { createContext, type AppContext, type Drivers } from './context.js';
import type { Database } from './db/client.js';
import type { FulfillerLine } from './modules/orders/index.js';
import { LOG_SERIALIZERS } from './http/log.js';
import { AppError, registerErrorHandling } from './http/errors.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { Lifecycle } from './http/lifecycle.js';
import { registerProbes } from './http/probes.js';
import { SshGateway } from './modules/access/index.js';
import { sandboxDrivers, sandboxRoutes } from './drivers/payment/index.js';

// Zod's own messages in Chinese for anything our schemas do not word themselves.
z.config(z.locales.zhCN());

export interface BuildOptions {
  config: Config;
  database: Database;
  clock: Clock;
  logger?: boolean | object;
  drivers?: Partial<Drivers>;
  /** Fulfillers in place of the modules' own (createContext). */
  fulfillers?: FulfillerLine[];
}

/** The cache policy of the build's hashed assets. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

export async function buildApp(opts: BuildOptions): Promise<{ app: FastifyInstance; ctx: AppContext; lifecycle: Lifecycle }> {
  const app = Fastify({
    // Every logger gets the request serializer that keeps session tokens out of the log.
    logger:
      opts.logger === false ? false : { level: opts.config.LOG_LEVEL, ...(typeof opts.logger === 'object' ? opts.logger : {}), serializers: LOG_SERIALIZERS },
    trustProxy: opts.config.TRUST_PROXY,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w-]{8,64}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    bodyLimit: 1024 * 1024,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('session', null);
  // The JSON API takes JSON (and multipart uploads); plain text is refused as 415, not guessed at.
  app.removeContentTypeParser('text/plain');
  app.addHook('onSend', async (request, reply) => {
    // Not on the hashed assets: the same bytes for everyone, nothing to trace, and repeated on every file of a first load.
    if (reply.getHeader('cache-control') !== IMMUTABLE) reply.header('x-request-id', request.id);
  });
  registerSecurityHeaders(app);
  // The way out (SIGTERM): readiness, Connection: close, live streams and WebSockets (http/lifecycle.ts).
  const lifecycle = new Lifecycle();
  lifecycle.register(app);

  const ctx = await createContext({ ...opts, log: app.log });

  await app.register(fastifyCookie);
  await app.register(fastifyWebsocket, { options: { maxPayload: 1024 * 1024 }, preClose: lifecycle.socketsPreClose() });
  await app.register(fastifyMultipart, { limits: { fileSize: opts.config.UPLOAD_MAX_BYTES, files: 1, fields: 10 } });
  await app.register(fastifySwagger, {
    openapi: {
      info: { title: '算力云控制台 API', version: '0.1.0', description: '错误返回 { code, message, detail? }；code 前三位为 HTTP 状态。' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });

  const webDist = opts.config.webDist;
  const hasWeb = existsSync(path.join(webDist, 'index.html'));
  if (hasWeb) {
    await app.register(fastifyStatic, {
      root: webDist,
      wildcard: false,
      index: false,
      // The build writes .br and .gz beside each text file (web/vite.config.ts): they are sent by
      // accept-encoding, with vary, for assets and for index.html sent by the SPA fallback alike.
      preCompressed: true,
      setHeaders: (res, file) => {
        // Hashed assets never change; the page itself must always be fresh.
        const hashed = path.relative(webDist, file).startsWith(`assets${path.sep}`);
        res.header('cache-control', hashed ? IMMUTABLE : 'no-cache');
        // A first load fetches some forty of them over HTTP/1.1: headers only a revalidation or a
        // range request would use are bytes on every one (the page keeps its ETag for no-cache).
        if (hashed) for (const name of ['etag', 'last-modified', 'accept-ranges']) res.removeHeader(name);
      },
    });
  }
  const serveApp = (_req: FastifyRequest, reply: FastifyReply) => {
    if (!hasWeb) {
      return reply.status(503).type('text/plain; charset=utf-8').send('控制台前端尚未构建：请先运行 npm run build（npm start 会自动构建）。');
    }
    return reply.header('cache-control', 'no-cache').sendFile('index.html');
  };
  registerErrorHandling(app, serveApp);

  app.withTypeProvider<ZodTypeProvider>().get(
    API.healthz,
    {
      schema: {
        tags: ['系统'],
        summary: '健康检查',
        response: { 200: healthOkSchema, 503: healthDownSchema },
      },
    },
    async (_req, reply) => {
      try {
        await ctx.database.db.execute('select 1');
        return { status: 'ok' as const, database: ctx.database.kind };
      } catch {
        return reply.status(503).send({ status: 'down' as const, database: ctx.database.kind });
      }
    },
  );
  await registerProbes(app, { database: ctx.database, lifecycle });
  for (const plugin of ctx.routes) await app.register(plugin);
  // The embedded stand-ins' own pages: the simulated machines' JupyterLab/application pages always
  // (they are how an instance is reached), the fleet's control panel and the sandbox scan page only
  // while dev tools are on (config.ts decides); off, their paths do not exist.
  const driverPages = ctx.drivers.compute.routes?.({ accessOf: (id) => ctx.instances.accessOf(id), controlPanel: opts.config.devTools });
  if (driverPages) await app.register(driverPages);
  const sandboxes = sandboxDrivers(ctx.drivers.payment);
  if (sandboxes.length && opts.config.devTools) await app.register(async (scope) => sandboxRoutes(scope, sandboxes));

  ctx.terminals.log = (m) => app.log.warn(m);
  // The SSH gateway comes up with the HTTP server, for drivers whose machines it can reach.
  const compute = ctx.drivers.compute;
  const runningIds = compute.runningIds?.bind(compute);
  const ssh =
    compute.shell && runningIds
      ? new SshGateway({
          driver: compute,
          runningIds,
          login: (ids, user, password) => ctx.instances.sshLogin(ids, user, password),
          keyLogin: (ids, user, key, signed) => ctx.sshKeys.login(ids, user, key, signed),
          hostKeyFile: path.join(opts.config.dataDir, 'ssh_host_rsa_key'),
          hostKeyPem: opts.config.SSH_HOST_KEY,
          log: (m) => app.log.warn(m),
          counters: ctx.counters,
          now: () => ctx.clock.now().getTime(),
        })
      : null;
  if (ssh) {
    app.addHook('onListen', async () => {
      try {
        ctx.sshEndpoint.port = await ssh.listen(opts.config.SSH_GATEWAY_PORT, opts.config.HOST);
        app.log.info(`SSH 网关已启动：端口 ${ctx.sshEndpoint.port}`);
      } catch (e) {
        app.log.error(
          `SSH 网关无法监听端口 ${opts.config.SSH_GATEWAY_PORT}（${(e as Error).message}）：实例暂时无法通过 SSH 登录；用 SSH_GATEWAY_PORT 换一个空闲端口后重启`,
        );
      }
    });
  }

  // The machines' web services come up with it too, on their own listener (machine-origin.ts says why).
  // The desktop is relayed by the console itself; the other services are web pages of their own.
  // ComfyUI application instances are always served (the embedded ComfyUI where the fleet runs none).
  const servesPages = true;
  const machines = servesPages && ctx.machineOrigins.configured ? await machineListener(ctx, app.log, lifecycle) : null;
  if (servesPages && !ctx.machineOrigins.configured) {
    app.log.warn(
      'JupyterLab 与自定义服务未开放：控制台不在 localhost 上，实例的网页需要各自的来源。设置 MACHINE_BASE_URL=https://{id}.example-machines.com（泛域名解析与证书，最好不与控制台同一主域）后重启',
    );
  }
  if (machines) {
    app.addHook('onListen', async () => {
      try {
        await machines.listen({ port: opts.config.machinePort, host: opts.config.HOST });
        ctx.machineOrigins.port = (machines.server.address() as AddressInfo).port;
        const shared = ctx.machineOrigins.perInstance
          ? '每台实例一个来源'
          : '所有实例共用一个来源；设置 MACHINE_BASE_URL=https://{id}.example-machines.com（泛域名）让每台实例各用一个';
        app.log.info(`JupyterLab 与自定义服务：${ctx.machineOrigins.template}（${shared}）`);
      } catch (e) {
        app.log.error(
          `实例服务端口 ${opts.config.machinePort} 无法监听（${(e as Error).message}）：JupyterLab 与自定义服务暂时打不开；用 MACHINE_PORT 换一个空闲端口后重启`,
        );
      }
    });
  }

  app.addHook('onClose', async () => {
    await machines?.close();
    await ssh?.close();
    ctx.accessGate.stop();
    await ctx.terminals.stop();
    await ctx.drivers.compute.shutdown?.();
    await ctx.counters.close();
    await ctx.database.close();
  });
  void ERRORS;
  return { app, ctx, lifecycle };
}

/** The listener of the machines' web services: the proxy and its entry, nothing of the console. */
async function machineListener(ctx: AppContext, log: FastifyBaseLogger, lifecycle: Lifecycle): Promise<FastifyInstance> {
  const machines = Fastify({ loggerInstance: log.child({ listener: 'machines' }), trustProxy: ctx.config.TRUST_PROXY, bodyLimit: 1024 * 1024 });
  await machines.register(fastifyCookie);
  await machines.register(fastifyWebsocket, { options: { maxPayload: 16 * 1024 * 1024 }, preClose: lifecycle.socketsPreClose() });
  registerErrorHandling(machines, (req, reply) => reply.status(404).send(new AppError('NOT_FOUND', `${req.method} ${req.url.split('?')[0]}`).body()));
  await machines.register(ctx.machineRoutes);
  return machines;
}
