/**
 * The market feature (the public GPU market and purchase form, the product pages and their quotes):
 * what other features may use of it. Anything not exported here is its own business (eslint.config.js,
 * import-x/no-restricted-paths).
 */
export { catalogueQueries } from './api/catalogue';
