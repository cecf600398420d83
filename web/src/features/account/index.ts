/**
 * The account feature (账号中心 and the personal/enterprise centres: certification, students, children,
 * SSH keys, notices): what other features may use of it. Anything not exported here is its own
 * business (eslint.config.js, import-x/no-restricted-paths).
 */
export { ACCOUNT_KEYS, accountQueries, childApi, OPERATOR_KEYS, operatorApi } from './api/account';
