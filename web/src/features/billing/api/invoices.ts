import { queryOptions } from '@tanstack/react-query';
import { API, type Invoice, type Invoiceable, type InvoicePage, type InvoiceRequest, type InvoiceStatus, type OperatorInvoicePage } from '@console/contract';
import { api } from '../../../api/client';

/** Query keys of the invoice views: a request, a cancellation or an operator's decision changes them all. */
export const INVOICE_KEYS = {
  all: ['invoices'] as const,
  invoiceable: ['invoices', 'invoiceable'] as const,
  list: (page: number, pageSize: number) => ['invoices', 'list', page, pageSize] as const,
};

export const invoicesApi = {
  invoiceable: (signal?: AbortSignal) => api.get<Invoiceable>(API.invoiceable, undefined, { signal }),
  list: (q: { page: number; pageSize: number; status?: InvoiceStatus }, signal?: AbortSignal) => api.get<InvoicePage>(API.invoices, q, { signal }),
  create: (body: InvoiceRequest) => api.post<Invoice>(API.invoices, body, { successMessage: '开票申请已提交，开具后将发送到您的邮箱' }),
  cancel: (id: string) => api.post<Invoice>(API.invoiceCancel, { id }, { successMessage: '开票申请已撤回' }),
};

/**
 * The operator's side: every holder's requests, issued with the invoice number or rejected with a
 * reason. Their query keys live with the operator area's (OPERATOR_KEYS), which a decision invalidates.
 */
export const operatorInvoiceApi = {
  list: (q: { page: number; pageSize: number; status?: InvoiceStatus }, signal?: AbortSignal) =>
    api.get<OperatorInvoicePage>(API.operatorInvoices, q, { signal }),
  issue: (id: string, invoiceNo: string) => api.post<Invoice>(API.operatorInvoiceIssue, { id, invoiceNo }, { successMessage: '已标记为已开票' }),
  reject: (id: string, reason: string) => api.post<Invoice>(API.operatorInvoiceReject, { id, reason }, { successMessage: '已驳回开票申请' }),
};

export const invoiceQueries = {
  invoiceable: () => queryOptions({ queryKey: INVOICE_KEYS.invoiceable, queryFn: ({ signal }) => invoicesApi.invoiceable(signal) }),
};
