/**
 * The sandbox gateway's public face: the scan page a QR code points to, and the two buttons on
 * it. Registered only while a sandbox driver is configured and dev tools are on (config.ts): in
 * production these paths do not exist.
 *
 *   GET  /dev/pay/sandbox/:outTradeNo         the scan page (HTML)
 *   POST /dev/pay/sandbox/:outTradeNo/pay     确认支付: pays and sends the notification
 *   POST /dev/pay/sandbox/:outTradeNo/close   取消: closes the unpaid trade
 */
import type { FastifyInstance } from 'fastify';
import { ERRORS, type ErrorBody } from '@console/contract';
import { AppError } from '../../http/errors.js';
import { notFoundPage, PAID_TEXT, SCAN_PAGE_CSP, scanPage } from './sandbox-page.js';
import { SandboxRefusal, type SandboxPaymentDriver, type SandboxRefusalReason, type SandboxView } from './sandbox.js';

/**
 * 409 answers, until the catalogue (contract/src/errors.ts) has them: the error handler only
 * knows catalogue names, so these are sent as they are, in the same envelope.
 */
export const SANDBOX_CONFLICTS: Record<Exclude<SandboxRefusalReason, 'NotFound'>, ErrorBody> = {
  Expired: { code: ERRORS.PAY_TRADE_EXPIRED.code, message: ERRORS.PAY_TRADE_EXPIRED.message },
  Closed: { code: ERRORS.PAY_TRADE_CLOSED.code, message: ERRORS.PAY_TRADE_CLOSED.message },
  AlreadyPaid: { code: ERRORS.PAY_TRADE_PAID.code, message: ERRORS.PAY_TRADE_PAID.message },
};

type Params = { Params: { outTradeNo: string } };

export function sandboxRoutes(app: FastifyInstance, drivers: SandboxPaymentDriver | SandboxPaymentDriver[]): void {
  const all = Array.isArray(drivers) ? drivers : [drivers];

  /** The sandbox (Alipay or WeChat) that holds this trade. */
  async function locate(outTradeNo: string): Promise<{ driver: SandboxPaymentDriver; view: SandboxView } | undefined> {
    for (const driver of all) {
      const view = await driver.find(outTradeNo);
      if (view) return { driver, view };
    }
    return undefined;
  }

  /** Runs a button's action; a refusal becomes the 404 or 409 the page shows. */
  async function act(outTradeNo: string, action: (d: SandboxPaymentDriver) => Promise<SandboxView>): Promise<{ view: SandboxView } | { conflict: ErrorBody }> {
    const found = await locate(outTradeNo);
    if (!found) throw new AppError('NOT_FOUND', `交易不存在：${outTradeNo}`);
    try {
      return { view: await action(found.driver) };
    } catch (e) {
      if (!(e instanceof SandboxRefusal)) throw e;
      if (e.reason === 'NotFound') throw new AppError('NOT_FOUND', `交易不存在：${outTradeNo}`);
      return { conflict: SANDBOX_CONFLICTS[e.reason] };
    }
  }

  app.get<Params>('/dev/pay/sandbox/:outTradeNo', async (req, reply) => {
    const found = await locate(req.params.outTradeNo);
    reply.header('cache-control', 'no-store').header('content-security-policy', SCAN_PAGE_CSP).type('text/html; charset=utf-8');
    if (!found) return reply.status(404).send(notFoundPage(req.params.outTradeNo));
    return reply.send(scanPage(found.view));
  });

  app.post<Params>('/dev/pay/sandbox/:outTradeNo/pay', async (req, reply) => {
    const r = await act(req.params.outTradeNo, (d) => d.pay(req.params.outTradeNo));
    if ('conflict' in r) return reply.status(409).send(r.conflict);
    const v = r.view;
    return { outTradeNo: v.trade.outTradeNo, status: v.status, paidAt: v.trade.paidAt, message: PAID_TEXT };
  });

  app.post<Params>('/dev/pay/sandbox/:outTradeNo/close', async (req, reply) => {
    const r = await act(req.params.outTradeNo, (d) => d.closeTrade(req.params.outTradeNo));
    if ('conflict' in r) return reply.status(409).send(r.conflict);
    const v = r.view;
    return { outTradeNo: v.trade.outTradeNo, status: v.status, message: v.closedReason === 'Expired' ? '交易已超时关闭' : '交易已关闭' };
  });

  app.addHook('onClose', async () => {
    for (const d of all) d.stop();
  });
}
