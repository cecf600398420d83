export { ACCOUNT_KEYS, accountQueries, childApi, OPERATOR_KEYS, operatorApi } from './api/account';
