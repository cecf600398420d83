/**
 * The bill of a post-paid (按量计费) order, line by line, built from what the ledger took for it:
 * every charge of the order (transfers of kind usage, each with what left the payer's gift credit
 * and cash) falls in exactly one line, so the lines add up to the order's total to the 0.0001 yuan.
 *
 * A charge's key says what it was for (billing.ts, disks.ts, service.ts of instances):
 *   usage:<instance>:<segment start ms>:<ms metered>   a tick of a run segment, cumulative
 *   disk:<instance>:<hour start ms>                    one hour of data disk beyond the free size, its
 *                                                      memo "… 70 GB（1 小时，按 ¥0.49/天）" (before
 *                                                      disks were charged by the hour: a day, "（1 天）")
 *   disk-resize:resizeDisk:<instance>:<ms>             the rest of an hour after a disk expansion
 *   arrears:<instance>:<amount>:<ms>                   arrears paid before a start
 * A run segment's mode and rate are not in its charges: usage_runs keeps them (written at its first
 * charge); a segment charged before that table existed shows no rate.
 */
import { eq } from 'drizzle-orm';
import { UsageLineKind, yuanToUnits, type OrderPrice, type UsageBill, type UsageLine } from '@console/contract';
import type { Db } from '../../db/client.js';
import type { LedgerService } from '../ledger/index.js';
import type { OrderRow } from './rows.js';
import { usageRuns } from './schema.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const RUN_KEY = new RegExp(`^usage:(${UUID}):(\\d+):(\\d+)$`);
const DISK_KEY = new RegExp(`^disk:(${UUID}):(\\d+)$`);
const RESIZE_KEY = new RegExp(`^disk-resize:[^:]*:(${UUID}):(\\d+)$`);
const ARREARS_KEY = new RegExp(`^arrears:(${UUID}):`);

type Charge = Awaited<ReturnType<LedgerService['orderCharges']>>[number];
type Run = typeof usageRuns.$inferSelect;

interface Acc {
  kind: UsageLineKind;
  resource: string;
  detail: string;
  start: number | null;
  end: number | null;
  rate: bigint | null;
  rateUnit: '小时' | '天' | null;
  /** The bandwidth's share of a run's hourly rate. */
  bandwidth: bigint;
  amount: bigint;
  charges: number;
  /** When its first charge was posted: the order of lines without a start. */
  first: number;
}

export async function usageBill(db: Db, ledger: LedgerService, order: OrderRow): Promise<UsageBill> {
  const charges = await ledger.orderCharges(order.userId, order.orderUid, 'usage');
  const runs = await db.select().from(usageRuns).where(eq(usageRuns.orderId, order.id));
  const runOf = new Map(runs.map((r) => [`${r.resourceId}:${r.segmentStart.getTime()}`, r]));
  const names = resourceNames(charges);
  const machine = machineName(order.quote as OrderPrice);

  const lines = new Map<string, Acc>();
  const add = (id: string, c: Charge, make: () => Omit<Acc, 'amount' | 'charges' | 'first'>, extend?: (a: Acc) => void) => {
    let acc = lines.get(id);
    if (!acc) lines.set(id, (acc = { ...make(), amount: 0n, charges: 0, first: c.createdAt.getTime() }));
    acc.amount += c.paid;
    acc.charges += 1;
    extend?.(acc);
  };

  for (const c of charges) {
    let m: RegExpExecArray | null;
    if ((m = RUN_KEY.exec(c.key))) {
      const [, resource, seg, ms] = m;
      const start = Number(seg);
      const facts = runOf.get(`${resource}:${start}`);
      add(
        `run:${resource}:${seg}`,
        c,
        () => runLine(facts, names.get(resource!) ?? '', machine, start),
        (a) => {
          a.end = Math.max(a.end ?? start, start + Number(ms));
        },
      );
    } else if ((m = DISK_KEY.exec(c.key)) && !c.memo.includes('（1 天）')) {
      // An hour of data disk: one line per instance, size and daily price, its hours in a row.
      const [, resource, from] = m;
      const hour = Number(from);
      const size = diskSize(c.memo);
      const daily = /按 ¥(\d+(?:\.\d{1,4})?)\/天/.exec(c.memo)?.[1];
      add(
        `disk:${resource}:${size}:${daily ?? ''}`,
        c,
        () => ({
          kind: 'dataDisk',
          resource: names.get(resource!) ?? '',
          detail: '',
          start: hour,
          end: hour,
          rate: daily === undefined ? null : yuanToUnits(daily),
          rateUnit: '天',
          bandwidth: 0n,
        }),
        (a) => {
          a.start = Math.min(a.start!, hour);
          a.end = Math.max(a.end!, hour + HOUR_MS);
          a.detail = `${size} × ${Math.round((a.end - a.start) / HOUR_MS)} 小时`.trim();
        },
      );
    } else if ((m = DISK_KEY.exec(c.key))) {
      // A day of data disk, as disks were charged before they were charged by the hour.
      const [, resource, from] = m;
      const day = Number(from);
      add(
        `disk:${resource}`,
        c,
        () => ({
          kind: 'dataDisk',
          resource: names.get(resource!) ?? '',
          detail: diskSize(c.memo),
          start: day,
          end: day,
          rate: c.paid,
          rateUnit: '天',
          bandwidth: 0n,
        }),
        (a) => {
          a.start = Math.min(a.start!, day);
          a.end = Math.max(a.end!, day + DAY_MS);
          // One price a day; a day the balance paid only in part leaves the rate unsaid rather than wrong.
          if (a.rate !== null && a.rate !== c.paid) a.rate = null;
          a.detail = `${diskSize(c.memo)} × ${Math.round((a.end - a.start) / DAY_MS)} 天`.trim();
        },
      );
    } else if ((m = RESIZE_KEY.exec(c.key))) {
      add(`charge:${c.transferId}`, c, () => single('diskResize', names.get(m![1]!) ?? '', c, Number(m![2])));
    } else if ((m = ARREARS_KEY.exec(c.key))) {
      add(`charge:${c.transferId}`, c, () => single('arrears', names.get(m![1]!) ?? '', c, null));
    } else {
      add(`charge:${c.transferId}`, c, () => single('other', '', c, null));
    }
  }

  const out: UsageLine[] = [];
  const sorted = [...lines.values()].sort((a, b) => (a.start ?? a.first) - (b.start ?? b.first) || a.first - b.first);
  for (const a of sorted) out.push(...split(a));
  return {
    orderUid: order.orderUid,
    lines: out,
    total: String(out.reduce((n, l) => n + BigInt(l.amount), 0n)),
    billing: order.status === 'Time',
  };
}

/** A run segment's line: GPU time, no-card time, or the run of an instance without cards. */
function runLine(facts: Run | undefined, resource: string, machine: string, start: number): Omit<Acc, 'amount' | 'charges' | 'first'> {
  const kind: UsageLineKind = !facts ? 'run' : facts.noCard ? 'noCard' : facts.cards > 0 ? 'gpu' : 'run';
  const detail = kind === 'noCard' ? '无卡模式（不占用 GPU）' : kind === 'gpu' && machine ? `${machine} × ${facts!.cards}` : machine;
  return { kind, resource, detail, start, end: start, rate: facts?.ratePerHour ?? null, rateUnit: '小时', bandwidth: facts?.bandwidthPerHour ?? 0n };
}

function single(kind: UsageLineKind, resource: string, c: Charge, start: number | null): Omit<Acc, 'amount' | 'charges' | 'first'> {
  const detail = resource && c.memo.startsWith(`${resource} `) ? c.memo.slice(resource.length + 1) : c.memo;
  return { kind, resource, detail, start, end: null, rate: null, rateUnit: null, bandwidth: 0n };
}

/**
 * The line as shown: a run segment whose rate includes bandwidth gives the bandwidth its share of
 * what was taken (in proportion to the rates, rounded down) and the run the rest, so the two still
 * add up to what the segment's charges took.
 */
function split(a: Acc): UsageLine[] {
  const bandwidth = a.bandwidth;
  const timed = a.rateUnit === '小时' || a.kind === 'dataDisk';
  const seconds = a.start !== null && a.end !== null && timed ? Math.round((a.end - a.start) / 1000) : null;
  const line = (kind: UsageLineKind, detail: string, rate: bigint | null, amount: bigint): UsageLine => ({
    kind,
    label: UsageLineKind.label(kind),
    resource: a.resource,
    detail,
    start: a.start === null ? null : new Date(a.start).toISOString(),
    end: a.end === null ? null : new Date(a.end).toISOString(),
    seconds,
    rate: rate === null ? null : String(rate),
    rateUnit: rate === null ? null : a.rateUnit,
    amount: String(amount),
    charges: a.charges,
  });
  if (bandwidth > 0n && a.rate !== null && a.rate > bandwidth) {
    const share = (a.amount * bandwidth) / a.rate;
    return [line(a.kind, a.detail, a.rate - bandwidth, a.amount - share), line('bandwidth', '超出套餐的公网带宽', bandwidth, share)];
  }
  return [line(a.kind, a.detail, a.rate, a.amount)];
}

/** Each instance's name, from the memo of its run charges (`<name> 按量计费`), else of any charge. */
function resourceNames(charges: Charge[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of charges) {
    const id = new RegExp(UUID).exec(c.key)?.[0];
    if (!id) continue;
    const run = /^(.*) 按量计费$/.exec(c.memo);
    if (run) out.set(id, run[1]!);
    else if (!out.has(id)) out.set(id, c.memo.split(' ')[0] ?? '');
  }
  return out;
}

/** "RTX 4090" from the quote's compute line "RTX 4090 × 1（1 小时）". */
function machineName(quote: OrderPrice): string {
  const compute = quote.lines?.find((l) => l.kind === 'compute')?.name ?? '';
  return compute
    .replace(/（[^（）]*）$/, '')
    .replace(/\s*×\s*\d+$/, '')
    .trim();
}

/** "50 GB" from "<name> 数据盘扩容 50 GB（1 小时，按 ¥0.35/天）". */
function diskSize(memo: string): string {
  // The memo starts with the instance's name, which may hold a size of its own ("CPU 2 核 4 GB"): the disk's is the last.
  return [...memo.matchAll(/(\d+ GB)/g)].at(-1)?.[1] ?? '';
}
