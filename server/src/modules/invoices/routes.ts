import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  invoiceIdParamsSchema,
  invoiceIssueSchema,
  invoiceListQuerySchema,
  invoicePageSchema,
  invoiceRejectSchema,
  invoiceRequestSchema,
  invoiceSchema,
  invoiceableSchema,
  operatorInvoicePageSchema,
} from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { InvoiceService } from './service.js';

const tags = ['发票'];

export interface InvoiceRoutesDeps {
  auth: AuthGuards;
  invoices: InvoiceService;
  /** The operator module's check: the operator's id (null for `npm run operator`), refusing anyone else. */
  operatorOf(req: FastifyRequest): Promise<string | null>;
  /** The operator audit trail (operator module): records what the operator admitted on `req` did. */
  audit?(
    req: FastifyRequest,
    event: { action: string; targetType: string; targetId: string; before?: unknown; after?: unknown; reason?: string },
  ): Promise<void>;
}

/** Invoices are the account holder's: a child account neither sees nor requests them (40300005). */
export async function invoiceRoutes(app: FastifyInstance, deps: InvoiceRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireMainAccount } = deps.auth;
  const me = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user.id;

  r.get(
    API.invoiceable,
    {
      schema: { tags, summary: '可开票金额（现金消费净额，不超过实付到账 − 退款；再减已开票、待开票）', response: { 200: invoiceableSchema } },
      onRequest: requireMainAccount,
    },
    async (req) => {
      const a = await deps.invoices.invoiceable(me(req));
      return {
        invoiceable: String(a.invoiceable),
        paidIn: String(a.paidIn),
        refunded: String(a.refunded),
        consumed: String(a.consumed),
        invoiced: String(a.invoiced),
        pending: String(a.pending),
      };
    },
  );
  r.get(
    API.invoices,
    {
      schema: { tags, summary: '我的发票申请（最新在前）', querystring: invoiceListQuerySchema, response: { 200: invoicePageSchema } },
      onRequest: requireMainAccount,
    },
    (req) => deps.invoices.list(me(req), req.query),
  );
  r.post(
    API.invoices,
    { schema: { tags, summary: '申请开票（待开票）', body: invoiceRequestSchema, response: { 200: invoiceSchema } }, onRequest: requireMainAccount },
    (req) => deps.invoices.create(me(req), me(req), req.body),
  );
  r.post(
    API.invoiceCancel,
    { schema: { tags, summary: '撤回待开票的申请', params: invoiceIdParamsSchema, response: { 200: invoiceSchema } }, onRequest: requireMainAccount },
    (req) => deps.invoices.cancel(me(req), req.params.id),
  );

  const ops = ['运营'];
  r.get(
    API.operatorInvoices,
    { schema: { tags: ops, summary: '发票申请队列', querystring: invoiceListQuerySchema, response: { 200: operatorInvoicePageSchema } } },
    async (req) => {
      await deps.operatorOf(req);
      return deps.invoices.queue(req.query);
    },
  );
  r.post(
    API.operatorInvoiceIssue,
    { schema: { tags: ops, summary: '标记已开票（填写发票号码）', params: invoiceIdParamsSchema, body: invoiceIssueSchema, response: { 200: invoiceSchema } } },
    async (req) => {
      const operatorId = await deps.operatorOf(req);
      const issued = await deps.invoices.issue(req.params.id, req.body.invoiceNo, operatorId);
      await deps.audit?.(req, { action: 'invoice.issue', targetType: 'invoice', targetId: req.params.id, before: { status: 'Pending' }, after: issued });
      req.log.info({ operatorId, invoice: req.params.id, invoiceNo: req.body.invoiceNo }, 'invoice issued');
      return issued;
    },
  );
  r.post(
    API.operatorInvoiceReject,
    { schema: { tags: ops, summary: '驳回发票申请（须写原因）', params: invoiceIdParamsSchema, body: invoiceRejectSchema, response: { 200: invoiceSchema } } },
    async (req) => {
      const operatorId = await deps.operatorOf(req);
      const rejected = await deps.invoices.reject(req.params.id, req.body.reason, operatorId);
      await deps.audit?.(req, {
        action: 'invoice.reject',
        targetType: 'invoice',
        targetId: req.params.id,
        before: { status: 'Pending' },
        after: rejected,
        reason: req.body.reason,
      });
      req.log.info({ operatorId, invoice: req.params.id, reason: req.body.reason }, 'invoice rejected');
      return rejected;
    },
  );
}
