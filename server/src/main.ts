/** `npm start`: configuration, database, migrations, seed, then one server until a signal stops it. */
import { watchFile } from 'node:fs';
import type { FastifyBaseLogger } from 'fastify';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { bwrapWorks } from './drivers/compute/local/sandbox.js';
import { openDatabase } from './db/client.js';
import { seedDemo, DEMO_ACCOUNT } from './db/seed.js';
import { buildApp } from './app.js';
import { JobLeases } from './jobs/leases.js';
import { startScheduler } from './jobs/scheduler.js';
import { schedulerDeps } from './context.js';
import { announceServer } from './cli/running-server.js';
import { serverLoggerOptions } from './log-format.js';

async function main() {
  let config;
  try {
    config = loadConfig(process.env, bwrapWorks);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(78);
    }
    throw e;
  }
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.dataDir, poolSize: config.DATABASE_POOL_SIZE });
  const { app, ctx, lifecycle } = await buildApp({
    config,
    database,
    clock: systemClock,
    logger: serverLoggerOptions(config.LOG_LEVEL, config.LOG_FORMAT),
  });
  if (config.seedDemo) {
    await seedDemo(database.db, systemClock);
    app.log.info(`演示账号：${DEMO_ACCOUNT.mobile} / ${DEMO_ACCOUNT.password}`);
  }

  watchCatalogue(config.catalogueFile, ctx.reloadCatalogue, app.log);
  // The embedded database has one process: what a crashed run of this console left leased is its own.
  if (database.kind === 'pglite') await new JobLeases(database.db).clearAll();
  const stopJobs = startScheduler(schedulerDeps(ctx), app.log);
  // onClose hooks run last-added first: the jobs stop (and give their leases back) before app.ts's hook closes the database.
  app.addHook('onClose', async () => stopJobs());

  // The way out (http/lifecycle.ts): /readyz 503 at once, SHUTDOWN_DRAIN_MS of serving on, then no new
  // connections, WebSockets closed with 1012, requests in flight finished (cut at SHUTDOWN_TIMEOUT_MS),
  // leases given back, the database closed, exit 0. A second signal does not hurry it.
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    const { shutdownDrainMs: drainMs, SHUTDOWN_TIMEOUT_MS: timeoutMs } = config;
    app.log.info({ signal, drainMs, timeoutMs }, '正在停止：就绪探针已改为 503，等负载均衡摘除本副本后不再接受新连接，进行中的请求完成后退出');
    // What the stop itself cannot end (a hook that hangs) ends here.
    const force = setTimeout(() => {
      app.log.error({ timeoutMs }, '停止超时：强制退出');
      process.exit(1);
    }, timeoutMs + 5000);
    force.unref();
    try {
      const clean = await lifecycle.stop(app, { drainMs, timeoutMs });
      if (!clean) app.log.warn({ timeoutMs }, '部分请求或连接未在 SHUTDOWN_TIMEOUT_MS 内结束，已被断开');
      app.log.info('已停止');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, '停止时出错');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.PORT, host: config.HOST });
  if (database.kind === 'pglite') {
    // `npm run operator` talks to this process while it owns the embedded database.
    const announced = announceServer(config.dataDir, (app.server.address() as { port: number }).port);
    ctx.localOperatorToken = announced.token;
    process.on('exit', () => announced.remove());
  }
  app.log.info(`控制台已启动：http://localhost:${config.PORT}  （数据库：${database.kind === 'pglite' ? `内置 PGlite ${config.dataDir}` : 'PostgreSQL'}）`);
  app.log.info(`计算驱动：${config.COMPUTE_DRIVER}（${config.computeDriverReason}）`);
  app.log.info(devToolsLine(config));
}

/** Whether the dev tools are on, which of them exist with these drivers, and why (config.ts devToolsDecision). */
function devToolsLine(config: Config): string {
  if (!config.devTools) return `开发工具已关闭：${config.devToolsReason}`;
  const tools = [
    config.SMS_DRIVER === 'outbox' && config.MAIL_DRIVER === 'outbox' && '/dev/outbox',
    config.COMPUTE_DRIVER === 'simulated' && '/dev/compute',
    config.PAYMENT_DRIVER === 'sandbox' && '/dev/pay/sandbox',
  ].filter(Boolean);
  return `开发工具已开启（${tools.join('、') || '当前驱动下没有可用的开发工具'}）：${config.devToolsReason}`;
}

/**
 * The operator edits the catalogue file while the server runs; a valid change is applied within
 * seconds (and reaches other processes through the catalogue version), an invalid one is logged
 * and the running catalogue stays as it was.
 */
function watchCatalogue(file: string, reload: () => Promise<boolean>, log: FastifyBaseLogger) {
  watchFile(file, { interval: 2000 }, () => {
    reload()
      .then((changed) => changed && log.info({ file }, '目录文件已更新并生效'))
      .catch((err: Error) => log.error({ file, err: err.message }, '目录文件有误，未生效；当前目录保持不变'));
  }).unref();
}

main().catch((err) => {
  console.error('启动失败：', err);
  process.exit(1);
});
