/**
 * The billing feature (the cost centre: balance, bills, vouchers, deposits, resource packages,
 * recharge and invoices): what other features may use of it. Anything not exported here is its own
 * business (eslint.config.js, import-x/no-restricted-paths).
 */
export { INVOICE_KEYS, operatorInvoiceApi } from './api/invoices';
