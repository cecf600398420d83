/**
 * Password checks take turns (hashing.ts): with one at a time and two waiting, a burst of logins is
 * served in turn up to the line, the rest are told at once to retry (503 50300001), and the server
 * takes logins again as soon as the line has room. The limits are per process, so this file sets
 * its own.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API } from '@console/contract';
import { Hasher } from './hashing.js';
import { PASSWORD_HASH_COST, setPasswordHashCostForTests } from './passwords.js';
import { PASSWORD, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';

// The bursts below need hashes that take as long as real ones (test/setup.ts makes them cheap for the other files).
setPasswordHashCostForTests(PASSWORD_HASH_COST);

describe('a burst of logins', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '2' } });
  });
  afterAll(async () => s.close());

  it('logs in as many as the line holds, refuses the rest with 50300001, then takes logins again', async () => {
    const u = await registerUser(s);
    const burst = await Promise.all(Array.from({ length: 8 }, () => post(s.app, API.login, { account: u.mobile, password: PASSWORD })));
    const ok = burst.filter((r) => r.statusCode === 200);
    const busy = burst.filter((r) => r.statusCode === 503);
    expect(ok.length + busy.length).toBe(8);
    expect(ok.length).toBeGreaterThanOrEqual(3);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) expect(json(r)).toMatchObject({ code: 50300001, message: '当前登录和注册的人较多，请几秒后再试' });

    expect((await post(s.app, API.login, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });

  it('does not count a login refused as busy as a failed password: a storm never locks the account', async () => {
    const u = await registerUser(s);
    for (let round = 0; round < 3; round++) {
      const burst = await Promise.all(Array.from({ length: 12 }, () => post(s.app, API.login, { account: u.mobile, password: PASSWORD })));
      // Busy (503), or on PostgreSQL 429 while more than ten attempts are in flight at once — never a 400.
      expect(burst.map((r) => r.statusCode).filter((c) => ![200, 503, 429].includes(c))).toEqual([]);
    }
    // Once the storm is over the account is not locked: the busy refusals were not counted as failures.
    expect((await post(s.app, API.login, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });

  it('still refuses a wrong password with 40010005 and an unknown account alike', async () => {
    const u = await registerUser(s);
    expect(json(await post(s.app, API.login, { account: u.mobile, password: 'Wrong1234' })).code).toBe(40010005);
    expect(json(await post(s.app, API.login, { account: '13900000000', password: PASSWORD })).code).toBe(40010005);
  });
});

describe('a long line of logins with the right password', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '40' } });
  });
  afterAll(async () => s.close());

  it('refuses those beyond ten in the line with 42900003, and lets the account in as soon as the line is through', async () => {
    const u = await registerUser(s);
    // Thirty are counted within milliseconds while each hash takes tens: more than ten are counted at once.
    const burst = await Promise.all(Array.from({ length: 30 }, () => post(s.app, API.login, { account: u.mobile, password: PASSWORD })));
    const codes = burst.map((r) => (r.statusCode === 200 ? 200 : json(r).code));
    expect(codes.filter((c) => c !== 200 && c !== 42900003)).toEqual([]);
    expect(codes).toContain(42900003);
    // Those refusals counted attempts that then succeeded: none stands once they are through, not even for a moment.
    expect((await post(s.app, API.login, { account: u.mobile, password: PASSWORD })).statusCode).toBe(200);
  });
});

describe('where a hash runs', () => {
  /** The scheduling policy and nice value of each of this process's threads (Linux /proc/self/task/<tid>/stat). */
  function threadPriorities(): { policy: number; nice: number }[] {
    return readdirSync('/proc/self/task').flatMap((tid) => {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        // Fields after the name start at field 3: nice is field 19, policy field 41.
        return [{ nice: Number(fields[19 - 3]), policy: Number(fields[41 - 3]) }];
      } catch {
        return []; // a thread that ended while listing
      }
    });
  }

  it('hashes on a thread of the lowest CPU priority, so the event loop takes the core back at once', async () => {
    const hasher = new Hasher({ concurrency: 1, queue: 1 });
    const hashing = hasher.scrypt({ password: 'x', salt: Buffer.alloc(16), keyLength: 32, options: { N: 1 << 16, r: 8, p: 1, maxmem: 128 * 1024 * 1024 } });
    const SCHED_IDLE = 5;
    let seen: { policy: number; nice: number } | undefined;
    let done = false;
    void hashing.finally(() => (done = true));
    while (!done && !seen) {
      seen = threadPriorities().find((t) => t.policy === SCHED_IDLE || t.nice === 19);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect((await hashing).length).toBe(32);
    // SCHED_IDLE where util-linux's chrt is installed (Debian's base system), nice 19 where it is not.
    expect(seen).toEqual(hasChrt() ? { policy: SCHED_IDLE, nice: 19 } : { policy: 0, nice: 19 });
  });
});

function hasChrt(): boolean {
  try {
    execFileSync('chrt', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
