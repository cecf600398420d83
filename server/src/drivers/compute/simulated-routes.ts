/**
 * The simulated fleet's control panel, registered only while COMPUTE_DRIVER=simulated and dev tools
 * are on (config.ts; like /dev/outbox for the embedded SMS driver): inspect machines and pending
 * operations, inject faults, take a host away and bring it back; and, whenever the fleet is
 * simulated, the pages a machine's JupyterLab and application links open in this simulation
 * (each needs the instance's own token).
 *
 *   GET  /dev/compute                      fleet, pending operations, faults, lost hosts
 *   POST /dev/compute/faults               { kind, hostId?, count?, message? }
 *   POST /dev/compute/hosts/:id/lose       the host stops answering
 *   POST /dev/compute/hosts/:id/restore    the host answers again
 *   GET  /dev/compute/jupyter/:instanceId?token=…   (and /app/:instanceId)
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API } from '@console/contract';
import { AppError } from '../../http/errors.js';
import type { MachinePageAccess, MachineStatus } from './types.js';

const faultSchema = z.object({
  kind: z.enum(['create', 'boot', 'start', 'stop', 'restart', 'destroy', 'resizeDisk', 'migrate', 'saveImage', 'changeBandwidth'], {
    error: 'kind 必须是驱动的操作之一',
  }),
  hostId: z.string().trim().min(1).max(64).optional(),
  count: z.number().int().min(1).max(100).default(1),
  message: z.string().trim().min(1).max(200).default('模拟故障'),
});
const hostParams = z.object({ id: z.string().trim().min(1).max(64) });
const pageParams = z.object({ kind: z.enum(['jupyter', 'app']), instanceId: z.uuid() });

/** What the pages do with the simulated fleet (simulated.ts, which registers them). */
export interface SimulatedFleet {
  overview(): Promise<unknown>;
  injectFault(f: z.infer<typeof faultSchema>): Promise<unknown>;
  loseHost(hostId: string): Promise<unknown>;
  restoreHost(hostId: string): Promise<unknown>;
  status(instanceId: string): Promise<MachineStatus | null>;
}

/** `accessOf` is the instances module's: the fake Jupyter/app page shows how the instance would be reached. */
export function simulatedComputeRoutes(
  app: FastifyInstance,
  driver: SimulatedFleet,
  accessOf: (id: string) => Promise<MachinePageAccess | null>,
  opts: { controlPanel: boolean },
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['模拟算力'];

  if (opts.controlPanel) {
    r.get(API.devCompute, { schema: { tags, summary: '模拟机群概况' } }, async () => driver.overview());

    r.post(`${API.devCompute}/faults`, { schema: { tags, summary: '注入故障：之后的若干次操作失败', body: faultSchema } }, async (req) => {
      await driver.injectFault(req.body);
      return { ok: true as const };
    });

    r.post(`${API.devCompute}/hosts/:id/lose`, { schema: { tags, summary: '主机失联', params: hostParams } }, async (req) => {
      await driver.loseHost(req.params.id);
      return { ok: true as const };
    });

    r.post(`${API.devCompute}/hosts/:id/restore`, { schema: { tags, summary: '主机恢复', params: hostParams } }, async (req) => {
      await driver.restoreHost(req.params.id);
      return { ok: true as const };
    });
  }

  r.get(
    `${API.devCompute}/:kind/:instanceId`,
    { schema: { tags, summary: '模拟的 JupyterLab / 应用页面', params: pageParams, querystring: z.object({ token: z.string().max(64).optional() }) } },
    async (req, reply) => {
      const row = await accessOf(req.params.instanceId);
      if (!row || row.jupyterToken !== req.query.token) throw new AppError('NOT_FOUND', '链接无效或已过期');
      const status = await driver.status(row.id);
      const up = status?.power === 'running' && !status.lost;
      const title = req.params.kind === 'jupyter' ? 'JupyterLab' : '应用';
      reply.type('text/html; charset=utf-8');
      return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>${title} · ${escapeHtml(row.name)}</title>
<style>body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;margin:40px;color:#1f1f1f}code{background:#f4f0ff;padding:2px 6px;border-radius:4px}.ok{color:#389e0d}.off{color:#cf1322}</style></head>
<body><h1>${title}（模拟环境）</h1><p>实例：<b>${escapeHtml(row.name)}</b></p>
<p class="${up ? 'ok' : 'off'}">${up ? '机器运行中：真实部署时这里是实例上的 ' + title + '。' : '机器未在运行：请先在控制台开机。'}</p>
<p>SSH：<code>ssh -p ${row.sshPort ?? '-'} ${row.sshUser}@${escapeHtml(row.sshHost ?? '-')}</code></p></body></html>`;
    },
  );
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
