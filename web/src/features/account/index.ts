export { ACCOUNT_KEYS, childApi, OPERATOR_KEYS, operatorApi } from './api/account';
