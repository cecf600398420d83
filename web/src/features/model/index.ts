/**
 * The model feature (the model service: square, playground, API keys and usage): what other features
 * may use of it. Anything not exported here is its own business (eslint.config.js, import-x/no-
 * restricted-paths).
 */
export { beijingToday, dayBillPath, dayOfBillId, lastDays, looksLikeDayBill, useModelCalls, useModelStats } from './api/modelUsage';
export { StatsChart } from './components/StatsCharts';
export { CallTable, formatTokens, NoCallsYet, RetentionNote, sumColumns, UsageSumCards } from './components/StatsViews';
