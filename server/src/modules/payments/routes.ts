import type { FastifyInstance } from 'fastify';
import { AppError } from '../../http/errors.js';
import type { GatewayMethod } from '../../drivers/payment/types.js';
import type { RefundService } from './refunds.js';
import type { PaymentService } from './service.js';

const METHODS: Record<string, GatewayMethod> = { alipay: 'Alipay', wechat: 'Wechat' };

/**
 * Gateways POST here. The body is kept as the exact text that was signed: it is verified before
 * anything is parsed or credited.
 */
export interface PaymentRoutesDeps {
  payments: PaymentService;
  /** Refund notifications (WeChat Pay v3 REFUND.*) arrive here too, once refunds are wired. */
  refunds?: () => RefundService | undefined;
}

export async function paymentRoutes(app: FastifyInstance, deps: PaymentRoutesDeps) {
  // The signed text must reach the verifier untouched: JSON (WeChat) is not parsed either.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, body));
  app.post<{ Params: { method: string } }>(
    '/billing/api/v1/payment/notify/:method',
    { schema: { tags: ['支付'], summary: '支付渠道异步通知（支付宝 / 微信支付 v3）', hide: false } },
    async (req, reply) => {
      const method = METHODS[req.params.method];
      if (!method) throw new AppError('NOT_FOUND', `不支持的支付渠道 ${req.params.method}`);
      const ack = await deps.payments.handleNotification(method, req.headers, typeof req.body === 'string' ? req.body : '');
      return reply.status(ack.status).type(ack.contentType).send(ack.body);
    },
  );
  app.post<{ Params: { method: string } }>(
    '/billing/api/v1/payment/refund-notify/:method',
    { schema: { tags: ['支付'], summary: '退款结果异步通知（微信支付 v3 REFUND.*）', hide: false } },
    async (req, reply) => {
      const method = METHODS[req.params.method];
      const refunds = deps.refunds?.();
      if (!method || !refunds) throw new AppError('NOT_FOUND', `不支持的支付渠道 ${req.params.method}`);
      const ack = await refunds.handleNotification(method, req.headers, typeof req.body === 'string' ? req.body : '');
      return reply.status(ack.status).type(ack.contentType).send(ack.body);
    },
  );
}
