export { INVOICE_KEYS, operatorInvoiceApi } from './api/invoices';
