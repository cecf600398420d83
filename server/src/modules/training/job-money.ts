/**
 * The money of a job on the image backend (a LoRA job, a generation task), shared by training and
 * generation: its price is held from the cash when it starts, moved to revenue piece by piece as
 * the work is done (an epoch, an image), and what is left goes back to the cash when it ends. Each
 * move is an idempotent ledger transfer under the job's own key.
 */
import type { ErrorName } from '@console/contract';
import type { Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { laneShard, type AccountRef, type LedgerService, type TransferInput } from '../ledger/index.js';

/** The platform account holding a job's money between its start and its charges. */
export function jobHoldAccount(jobId: string): AccountRef {
  return { platform: 'hold', name: laneShard(jobId, { index: 0, count: 1 }) };
}

interface Move {
  key: string;
  kind: TransferInput['kind'];
  memo: string;
  actorId: string | null;
  jobId: string;
  amount: bigint;
}

/** The job's price from the payer's cash into its hold; a cash too short is refused with `short`. */
export async function holdJobCash(ledger: LedgerService, tx: Tx, m: Move & { payerId: string; short: ErrorName }): Promise<void> {
  if (m.amount === 0n) return;
  await ledger
    .post(
      {
        key: m.key,
        kind: m.kind,
        memo: m.memo,
        actorId: m.actorId,
        legs: [
          { account: { userId: m.payerId, kind: 'cash' }, amount: -m.amount },
          { account: jobHoldAccount(m.jobId), amount: m.amount },
        ],
      },
      tx,
    )
    .catch((e: unknown) => {
      throw e instanceof AppError && e.is('INSUFFICIENT_BALANCE') ? new AppError(m.short) : e;
    });
}

/** Work done: its share of the hold to revenue; what it moved (nothing when this key moved it before). */
export async function chargeJobHold(ledger: LedgerService, tx: Tx, m: Move): Promise<bigint> {
  if (m.amount === 0n) return 0n;
  const posted = await ledger.post(
    {
      key: m.key,
      kind: m.kind,
      memo: m.memo,
      actorId: m.actorId,
      legs: [
        { account: jobHoldAccount(m.jobId), amount: -m.amount },
        { account: { platform: 'revenue' }, amount: m.amount },
      ],
    },
    tx,
  );
  return posted.replayed ? 0n : m.amount;
}

/** The job ended: `amount` still held back to the payer's cash, and `refunded` of what was charged (a failure pays nothing). */
export async function returnJobHold(ledger: LedgerService, tx: Tx, m: Move & { payerId: string; refunded?: bigint }): Promise<void> {
  const refunded = m.refunded ?? 0n;
  const legs = [
    { account: jobHoldAccount(m.jobId), amount: -m.amount },
    { account: { platform: 'revenue' } as AccountRef, amount: -refunded },
    { account: { userId: m.payerId, kind: 'cash' } as AccountRef, amount: m.amount + refunded },
  ].filter((l) => l.amount !== 0n);
  if (legs.length < 2) return;
  await ledger.post({ key: m.key, kind: m.kind, memo: m.memo, actorId: m.actorId, legs }, tx);
}
