export { beijingToday, dayBillPath, dayOfBillId, lastDays, looksLikeDayBill, useModelCalls, useModelStats } from './api/modelUsage';
export { StatsChart } from './components/StatsCharts';
export { CallTable, formatTokens, NoCallsYet, RetentionNote, sumColumns, UsageSumCards } from './components/StatsViews';
