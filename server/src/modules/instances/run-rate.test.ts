import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/harness.js';
import type { Database } from '../../db/client.js';
import { rowsOf } from '../../db/results.js';
import { runRate, runRateSql } from './run-rate.js';

const rows = [
  { noCard: false, noCardHourlyPrice: 3000n, hourlyPrice: 19800n, bandwidthHourlyPrice: 0n },
  { noCard: true, noCardHourlyPrice: 3000n, hourlyPrice: 19800n, bandwidthHourlyPrice: 0n },
  { noCard: false, noCardHourlyPrice: 0n, hourlyPrice: 5000n, bandwidthHourlyPrice: 1500n },
  { noCard: true, noCardHourlyPrice: 0n, hourlyPrice: 5000n, bandwidthHourlyPrice: 1500n },
];

describe('the run rate', () => {
  let database: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ database, drop } = await openTestDatabase()));
  afterAll(async () => drop());

  it('is the same in SQL as in TypeScript', async () => {
    // The rows stand in for the instances table (runRateSql names its columns).
    const values = sql.join(
      rows.map((r) => sql`(${r.noCard}::boolean, ${r.noCardHourlyPrice}::bigint, ${r.hourlyPrice}::bigint, ${r.bandwidthHourlyPrice}::bigint)`),
      sql`, `,
    );
    const result = await database.db.execute(
      sql`select ${runRateSql} as rate from (values ${values}) as instances(no_card, no_card_hourly_price, hourly_price, bandwidth_hourly_price)`,
    );
    expect(rowsOf<{ rate: string }>(result).map((r) => BigInt(r.rate))).toEqual(rows.map((r) => runRate(r)));
    expect(rows.map((r) => runRate(r))).toEqual([19800n, 3000n, 6500n, 0n]);
  });

  it('can be asked for the mode a start is about to choose', () => {
    expect(runRate(rows[1]!, false)).toBe(19800n);
    expect(runRate(rows[2]!, true)).toBe(0n);
  });
});
