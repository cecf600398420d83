export { catalogueQueries } from './api/catalogue';
export { useDebouncedValue } from './hooks/useQuote';
