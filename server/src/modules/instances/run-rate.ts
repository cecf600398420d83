/**
 * What an hour of an instance's run costs: in no-card mode its no-card price; otherwise its plan's
 * price and the bandwidth it has beyond what its size includes. The same rule in SQL (runRateSql)
 * sums it over many instances; run-rate.test.ts holds the two together.
 */
import { sql, type SQL } from 'drizzle-orm';
import { instances } from './schema.js';

type RateColumns = Pick<typeof instances.$inferSelect, 'noCard' | 'noCardHourlyPrice' | 'hourlyPrice' | 'bandwidthHourlyPrice'>;

/** The run rate of the instance in its mode, or in the mode `noCard` says (a start asks for one). */
export function runRate(row: RateColumns, noCard = row.noCard): bigint {
  return noCard ? row.noCardHourlyPrice : row.hourlyPrice + bandwidthRate(row, false);
}

/** The part of the run rate that pays the bandwidth beyond the included: none in no-card mode. */
export function bandwidthRate(row: Pick<RateColumns, 'noCard' | 'bandwidthHourlyPrice'>, noCard = row.noCard): bigint {
  return noCard ? 0n : row.bandwidthHourlyPrice;
}

/** runRate of each instance row, in SQL. */
export const runRateSql: SQL<string> = sql<string>`(case when ${instances.noCard} then ${instances.noCardHourlyPrice} else ${instances.hourlyPrice} + ${instances.bandwidthHourlyPrice} end)`;
