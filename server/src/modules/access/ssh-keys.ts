/**
 * 账号中心's SSH public keys and what they open. A key a user adds logs into the SSH gateway of the
 * running instances that user may manage (the owner, or a child with the category's permission —
 * the same rule as every other way in), as long as the key stays: deleting it, losing the right or
 * the instance stopping ends such a session (the gateway looks again every few seconds).
 *
 * Which instance: `root.<first 8 hex of its id>` names it (the detail page's 公钥登录 command).
 * Never plain `root`: a public key is public, and anyone could add someone else's to their own
 * account — `ssh root@host` (the password command, which tries keys first) would then land its
 * owner in the other account's machine.
 */
import { createHash, createPublicKey, randomUUID } from 'node:crypto';
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import ssh2 from 'ssh2';
import { SSH_KEYS_PER_USER, type Instance, type SshKey, type SshKeyCreate } from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AppError, isAppError } from '../../http/errors.js';
import type { UserRow } from '../users/index.js';
import { sshKeys } from './schema.js';

/** RSA keys shorter than this are refused (OpenSSH itself refuses below 1024; 2048 is today's floor). */
const MIN_RSA_BITS = 2048;
/** OpenSSH's own ceiling: a longer key costs the gateway seconds per login. */
const MAX_RSA_BITS = 16_384;
const ALGORITHMS = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521))$/;

export interface SshKeyDeps {
  db: Db;
  clock: Clock;
  findUser(id: string): Promise<UserRow | undefined>;
  /** The instance as its user may see it (throws when the user may not). */
  instanceOf(user: UserRow, id: string): Promise<Instance>;
}

/** A key offered at login, as the SSH client sends it. */
export interface OfferedKey {
  algo: string;
  data: Buffer;
}

type KeyRow = typeof sshKeys.$inferSelect;

export class SshKeyService {
  constructor(private readonly deps: SshKeyDeps) {}

  async list(userId: string): Promise<SshKey[]> {
    const rows = await this.deps.db.select().from(sshKeys).where(eq(sshKeys.userId, userId)).orderBy(asc(sshKeys.createdAt));
    return rows.map(view);
  }

  async add(userId: string, input: SshKeyCreate): Promise<SshKey> {
    const key = parsePublicKey(input.publicKey);
    return this.deps.db.transaction(async (tx) => {
      // Counted under the user's own rows: two adds at once cannot both pass the limit.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`ssh-keys:${userId}`}, 0))`);
      const [{ n }] = (await tx.select({ n: count() }).from(sshKeys).where(eq(sshKeys.userId, userId))) as [{ n: number }];
      if (n >= SSH_KEYS_PER_USER) throw new AppError('SSH_KEY_LIMIT');
      const [dup] = await tx
        .select({ id: sshKeys.id })
        .from(sshKeys)
        .where(and(eq(sshKeys.userId, userId), eq(sshKeys.fingerprint, key.fingerprint)));
      if (dup) throw new AppError('SSH_KEY_DUPLICATE');
      const [row] = await tx
        .insert(sshKeys)
        .values({ id: randomUUID(), userId, name: input.name, ...key, createdAt: this.deps.clock.now() })
        .returning();
      return view(row!);
    });
  }

  async remove(userId: string, id: string): Promise<void> {
    const gone = await this.deps.db
      .delete(sshKeys)
      .where(and(eq(sshKeys.id, id), eq(sshKeys.userId, userId)))
      .returning({ id: sshKeys.id });
    if (!gone.length) throw new AppError('RECORD_NOT_FOUND', '公钥不存在或已删除');
  }

  /**
   * Which of these running instances the SSH user name and offered key log into, or null. With a
   * signature (the second step of publickey authentication) it must verify against the key.
   */
  async login(instanceIds: string[], user: string, key: OfferedKey, signed?: { blob: Buffer; signature: Buffer; hashAlgo?: string }): Promise<string | null> {
    const candidates = instancesNamed(instanceIds, user);
    if (!candidates.length) return null;
    const rows = await this.keysLike(key);
    if (!rows.length) return null;
    if (signed && !verifies(rows[0]!, signed)) return null;
    const opens = new Set<string>();
    const used: string[] = [];
    for (const row of rows) {
      const owner = await this.activeUser(row.userId);
      if (!owner) continue;
      for (const id of candidates) {
        if (!(await this.manages(owner, id))) continue;
        opens.add(id);
        used.push(row.id);
      }
    }
    // Several machines and no name among them: which one is not for the gateway to guess.
    if (opens.size !== 1) return null;
    if (signed) await this.deps.db.update(sshKeys).set({ lastUsedAt: this.deps.clock.now() }).where(inArray(sshKeys.id, used));
    return [...opens][0]!;
  }

  /** A key's user, if that account may still log in (not disabled or deleted, nor its main account disabled). */
  private async activeUser(id: string): Promise<UserRow | null> {
    const user = await this.deps.findUser(id);
    if (!user || user.disabled || user.deletedAt) return null;
    if (user.parentId) {
      const parent = await this.deps.findUser(user.parentId);
      if (!parent || parent.disabled || parent.deletedAt) return null;
    }
    return user;
  }

  /** The stored keys equal to the offered one (any user's: one key may be several users'). */
  private async keysLike(key: OfferedKey): Promise<KeyRow[]> {
    const rows = await this.deps.db
      .select()
      .from(sshKeys)
      .where(eq(sshKeys.fingerprint, fingerprintOf(key.data)));
    const blob = key.data.toString('base64');
    return rows.filter((r) => r.blob === blob);
  }

  private async manages(user: UserRow, instanceId: string): Promise<boolean> {
    try {
      return (await this.deps.instanceOf(user, instanceId)).status === 'Running';
    } catch (e) {
      if (isAppError(e, 'RECORD_NOT_FOUND') || isAppError(e, 'PERMISSION_DENIED')) return false;
      throw e;
    }
  }
}

/** The instances a user name means: `root.<first 8 hex of the id>`. */
function instancesNamed(instanceIds: string[], user: string): string[] {
  const m = /^root\.([0-9a-f]{8})$/.exec(user);
  return m ? instanceIds.filter((id) => id.startsWith(m[1]!)) : [];
}

function verifies(row: KeyRow, signed: { blob: Buffer; signature: Buffer; hashAlgo?: string }): boolean {
  // RSA signatures over SHA-1 (ssh-rsa) are refused, as OpenSSH does since 8.8: rsa-sha2-256/512 only.
  if (row.algorithm === 'ssh-rsa' && signed.hashAlgo !== 'sha256' && signed.hashAlgo !== 'sha512') return false;
  const parsed = ssh2.utils.parseKey(`${row.algorithm} ${row.blob}`);
  if (parsed instanceof Error || Array.isArray(parsed)) return false;
  try {
    return parsed.verify(signed.blob, signed.signature, signed.hashAlgo as never) === true;
  } catch {
    return false;
  }
}

/** OpenSSH's fingerprint: SHA256 of the key's wire form, base64 without padding. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** One line of a `.pub` file as a stored key, or SSH_KEY_INVALID saying what is wrong with it. */
export function parsePublicKey(line: string): Pick<KeyRow, 'algorithm' | 'blob' | 'fingerprint'> {
  const text = line.trim();
  if (/PRIVATE KEY/.test(text)) throw new AppError('SSH_KEY_INVALID', '这是私钥：请粘贴以 .pub 结尾的公钥文件内容，私钥不要交给任何人');
  if (/[\r\n]/.test(text)) throw new AppError('SSH_KEY_INVALID', '一次只能添加一个公钥（一行）');
  let parsed: ReturnType<typeof ssh2.utils.parseKey>;
  let bits = 0;
  try {
    // ssh2 throws rather than answers for some malformed keys (an RSA blob with an empty modulus).
    parsed = ssh2.utils.parseKey(text);
    // The key must load as a real public key (a point on its curve, a usable modulus).
    if (!(parsed instanceof Error) && !Array.isArray(parsed) && !parsed.isPrivateKey()) {
      bits = createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0;
    }
  } catch {
    throw new AppError('SSH_KEY_INVALID');
  }
  if (parsed instanceof Error || Array.isArray(parsed) || parsed.isPrivateKey()) throw new AppError('SSH_KEY_INVALID');
  if (!ALGORITHMS.test(parsed.type)) throw new AppError('SSH_KEY_INVALID', `不支持 ${parsed.type} 类型的公钥：请使用 ed25519、RSA 或 ECDSA`);
  if (parsed.type === 'ssh-rsa' && (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS)) {
    throw new AppError('SSH_KEY_INVALID', `RSA 公钥应为 ${MIN_RSA_BITS}–${MAX_RSA_BITS} 位（这个是 ${bits} 位）：请用 ssh-keygen -t ed25519 生成新的密钥`);
  }
  const blob = parsed.getPublicSSH();
  return { algorithm: parsed.type, blob: blob.toString('base64'), fingerprint: fingerprintOf(blob) };
}

function view(r: KeyRow): SshKey {
  return {
    id: r.id,
    name: r.name,
    algorithm: r.algorithm,
    fingerprint: r.fingerprint,
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
  };
}
