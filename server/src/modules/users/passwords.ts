/**
 * Password hashing with scrypt (N=2^15, r=8, p=1), stored as `scrypt$N$r$p$salt$hash`. The hashes
 * take turns on low-priority worker threads (hashing.ts) so that a burst of logins leaves the
 * server responsive.
 */
import { randomBytes, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { DEFAULT_HASH_LIMITS, Hasher, type HashLimits } from './hashing.js';

/** One per process, like the cores it shares out. */
const hasher = new Hasher(DEFAULT_HASH_LIMITS);

/** How many hashes run at once and how many may wait (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE). */
export function limitPasswordHashing(limits: Partial<HashLimits>) {
  hasher.limit({ concurrency: limits.concurrency ?? DEFAULT_HASH_LIMITS.concurrency, queue: limits.queue ?? DEFAULT_HASH_LIMITS.queue });
}

/**
 * Throws AUTH_BUSY when the line of hashes is full: a login checks this before its queries, so a
 * flood of logins beyond the line costs the database nothing.
 */
export function assertPasswordCheckPossible() {
  hasher.assertRoom();
}

const scrypt = (password: string, salt: Buffer, keyLength: number, options: ScryptOptions) => hasher.scrypt({ password, salt, keyLength, options });

/** The cost of new hashes; a stored hash carries its own, so hashes made at another cost still verify. */
export const PASSWORD_HASH_COST = { N: 1 << 15, r: 8, p: 1 };
let PARAMS = PASSWORD_HASH_COST;
const KEY_LEN = 32;
const MAXMEM = 64 * 1024 * 1024;

/**
 * Tests only (server/test/setup.ts): the suites register hundreds of accounts, and at the real cost
 * each hash held a core for 100–400 ms on the 2-core CI machine. What a test of the hashing itself
 * measures (bursts, the line, priorities) sets the real cost back.
 */
export function setPasswordHashCostForTests(cost: { N: number; r: number; p: number }) {
  PARAMS = cost;
  DUMMY = dummyHash();
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password.normalize('NFKC'), salt, KEY_LEN, { ...PARAMS, maxmem: MAXMEM });
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  // Unknown accounts still pay for one hash, so timing does not tell which accounts exist.
  const parts = (stored ?? DUMMY).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, N, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(N),
    r: Number(r),
    p: Number(p),
    maxmem: MAXMEM,
  });
  return stored !== null && timingSafeEqual(key, expected);
}

const dummyHash = () => `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`;
let DUMMY = dummyHash();
