/**
 * Where the machines' pages live and how a browser gets in: an origin per instance on localhost or
 * with `{id}` in MACHINE_BASE_URL, no links at all for a console elsewhere without one; tickets
 * that work once and briefly; cookies that open one instance only, under its own host.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { isAppError } from '../../http/errors.js';
import { MemoryCounters } from '../../drivers/counters/index.js';
import { MachineOrigins } from './machine-origin.js';

const make = (publicBaseUrl: string, baseUrl: string | null = null, clock = new ManualClock()) =>
  new MachineOrigins({ publicBaseUrl, baseUrl, sessionKey: randomBytes(32), clock });

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isAppError(e, 'UNAUTHENTICATED')) return e.message;
    throw e;
  }
  throw new Error('accepted');
}

describe('machine origins', () => {
  it('gives each instance its own origin on localhost or with {id}, none for a console elsewhere unless the operator says where', () => {
    const local = make('http://localhost:8080');
    local.port = 8081;
    const id = randomUUID();
    expect(local.originOf(id)).toBe(`http://${id}.localhost:8081`);
    expect([local.configured, local.perInstance, local.reachable]).toEqual([true, true, true]);

    const remote = make('https://console.example.com');
    expect([remote.configured, remote.reachable]).toEqual([false, false]);

    const wildcard = make('https://console.example.com', 'https://{id}.m.example-machines.com/');
    expect(wildcard.originOf(id)).toBe(`https://${id}.m.example-machines.com`);
    expect(wildcard.cookieName(id)).toBe(`__Host-machine-${id}`);
    expect(wildcard.isOriginOf(`${id}.m.example-machines.com`, id)).toBe(true);
    expect(wildcard.isOriginOf(`${randomUUID()}.m.example-machines.com`, id)).toBe(false);

    const shared = make('https://console.example.com', 'http://10.0.0.5:8081');
    expect([shared.configured, shared.perInstance]).toEqual([true, false]);
    expect(shared.cookieName(id)).toBe(`machine-${id}`);
  });

  it('trades a ticket once, within a minute, for a cookie that opens its own instance only', async () => {
    const clock = new ManualClock();
    const o = make('http://localhost:8080', null, clock);
    o.port = 8081;
    const a = randomUUID();
    const b = randomUUID();
    const ticketOf = async (url: string) => new URL(url).searchParams.get('ticket')!;

    const url = await o.entryUrl('session-token', a, `/jupyter/${a}/tree`);
    expect(url.startsWith(`http://${a}.localhost:8081/_console/enter?ticket=`)).toBe(true);
    const entry = await o.redeem(await ticketOf(url));
    expect(entry).toMatchObject({ token: 'session-token', instanceId: a, to: `/jupyter/${a}/tree` });
    expect(await refusal(o.redeem(await ticketOf(url)))).toContain('已使用');

    expect(await o.sessionOf(entry.cookie, a)).toBe('session-token');
    expect(await refusal(o.sessionOf(entry.cookie, b))).toContain('控制台');
    expect(await refusal(o.sessionOf(undefined, a))).toContain('控制台');
    // A ticket is not a cookie: it carries where to go and is refused as one.
    const late = await ticketOf(await o.entryUrl('session-token', a, `/jupyter/${a}/tree`));
    expect(await refusal(o.sessionOf(late, a))).toContain('控制台');

    clock.advance(61_000);
    expect(await refusal(o.redeem(late))).toContain('过期');
    // Sealed with another server's key: nothing.
    expect(await refusal(make('http://localhost:8080').sessionOf(entry.cookie, a))).toContain('过期');
  });

  it('trades a ticket once across replicas that share the counters (issue 31)', async () => {
    const clock = new ManualClock();
    const sessionKey = randomBytes(32);
    const counters = new MemoryCounters();
    const [one, two] = [0, 1].map(() => new MachineOrigins({ publicBaseUrl: 'http://localhost:8080', baseUrl: null, sessionKey, clock, counters }));
    one!.port = 8081;
    const a = randomUUID();
    const ticket = new URL(await one!.entryUrl('session-token', a, `/jupyter/${a}/tree`)).searchParams.get('ticket')!;
    expect(await two!.redeem(ticket)).toMatchObject({ token: 'session-token', instanceId: a });
    expect(await refusal(one!.redeem(ticket))).toContain('已使用');
    // Counters that cannot be reached: refused, never admitted twice.
    const cut = new MachineOrigins({
      publicBaseUrl: 'http://localhost:8080',
      baseUrl: null,
      sessionKey,
      clock,
      counters: { take: () => Promise.reject(new Error('down')) },
    });
    const other = new URL(await one!.entryUrl('session-token', a, `/jupyter/${a}/tree`)).searchParams.get('ticket')!;
    expect(await refusal(cut.redeem(other))).toContain('暂时无法核验');
  });
});
