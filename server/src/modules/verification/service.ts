/**
 * Verification codes sent by SMS or e-mail: 6 digits, valid 5 minutes, single use, one per
 * target per 60 s, a cap per IP per hour, and locked after 5 wrong tries. Only the newest code
 * of a target and scene counts, so asking again replaces the old one.
 */
import { createHmac, randomInt, randomUUID } from 'node:crypto';
import { and, count, desc, eq, gt, isNull, lt, sql } from 'drizzle-orm';
import type { Clock } from '../../clock.js';
import type { Db, Executor } from '../../db/client.js';
import { verificationCodes } from './schema.js';
import type { MailDriver } from '../../drivers/mail/types.js';
import type { SmsDriver } from '../../drivers/sms/types.js';
import { AppError } from '../../http/errors.js';

export const CODE_TTL_SECONDS = 5 * 60;
export const RESEND_SECONDS = 60;
export const MAX_ATTEMPTS = 5;

type Channel = 'sms' | 'email';

const SMS_TEXT: Record<string, string> = {
  register: '您正在注册算力云账号',
  login: '您正在登录算力云',
  mobile: '您正在绑定新手机号',
  reset: '您正在找回密码',
};

export class VerificationService {
  constructor(
    private deps: {
      db: Db;
      clock: Clock;
      sms: SmsDriver;
      mail: MailDriver;
      secret: Uint8Array;
      ipLimitPerHour: number;
    },
  ) {}

  async sendSms(mobile: string, scene: string, ip: string) {
    const text = `【算力云】验证码 {code}，${SMS_TEXT[scene] ?? '请勿泄露'}，${CODE_TTL_SECONDS / 60} 分钟内有效。如非本人操作请忽略。`;
    return this.send('sms', mobile, scene, ip, (code) => this.deps.sms.send({ to: mobile, code, scene, text: text.replace('{code}', code) }));
  }

  async sendEmail(email: string, scene: string, ip: string) {
    return this.send('email', email, scene, ip, (code) =>
      this.deps.mail.send({
        to: email,
        code,
        subject: '【算力云】邮箱验证码',
        text: `您的验证码是 ${code}，${CODE_TTL_SECONDS / 60} 分钟内有效。如非本人操作请忽略本邮件。`,
      }),
    );
  }

  private async send(channel: Channel, target: string, scene: string, ip: string, deliver: (code: string) => Promise<void>) {
    const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
    const id = randomUUID();
    const now = this.deps.clock.now();
    await this.deps.db.transaction(async (tx) => {
      // Two simultaneous requests for one number must not both pass the 60 s check, nor two from one
      // address (for different numbers, on any replica) the hourly cap. Number first, then address, in
      // every request: two never wait on each other in a circle.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`code:${target}`}))`);
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`code-ip:${ip}`}))`);
      await this.assertNotTooFrequent(tx, target, ip, now);
      await tx.insert(verificationCodes).values({
        id,
        target,
        channel,
        scene,
        codeHash: this.hash(id, code),
        ip,
        createdAt: now,
        expiresAt: new Date(now.getTime() + CODE_TTL_SECONDS * 1000),
      });
    });
    try {
      await deliver(code);
    } catch (err) {
      // A code nobody received must not hold the 60 s window against the user.
      await this.deps.db.delete(verificationCodes).where(eq(verificationCodes.id, id));
      throw Object.assign(new AppError('SMS_SEND_FAILED'), { cause: err });
    }
    return { expiresIn: CODE_TTL_SECONDS, resendIn: RESEND_SECONDS };
  }

  private async assertNotTooFrequent(tx: Executor, target: string, ip: string, now: Date) {
    const [last] = await tx
      .select({ createdAt: verificationCodes.createdAt })
      .from(verificationCodes)
      .where(eq(verificationCodes.target, target))
      .orderBy(desc(verificationCodes.createdAt))
      .limit(1);
    if (last) {
      const wait = Math.ceil((last.createdAt.getTime() + RESEND_SECONDS * 1000 - now.getTime()) / 1000);
      if (wait > 0) throw new AppError('CODE_TOO_FREQUENT', `请 ${wait} 秒后再试`);
    }
    const hourAgo = new Date(now.getTime() - 3600_000);
    const [fromIp] = await tx
      .select({ n: count() })
      .from(verificationCodes)
      .where(and(eq(verificationCodes.ip, ip), gt(verificationCodes.createdAt, hourAgo)));
    if ((fromIp?.n ?? 0) >= this.deps.ipLimitPerHour) throw new AppError('CODE_IP_LIMIT');
  }

  /**
   * Checks a code without spending it and returns its id. Wrong tries are counted here, outside
   * any transaction, so a failing request still uses up an attempt. (PGlite runs one transaction
   * at a time, so this must not be called inside one.)
   */
  async verify(target: string, scene: string, code: string): Promise<string> {
    const now = this.deps.clock.now();
    const [row] = await this.deps.db
      .select()
      .from(verificationCodes)
      .where(and(eq(verificationCodes.target, target), eq(verificationCodes.scene, scene)))
      .orderBy(desc(verificationCodes.createdAt))
      .limit(1);
    if (!row || row.consumedAt || row.expiresAt <= now) throw new AppError('SMS_CODE_EXPIRED');
    if (row.attempts >= MAX_ATTEMPTS) throw new AppError('SMS_CODE_LOCKED');
    if (this.hash(row.id, code) !== row.codeHash) {
      const [after] = await this.deps.db
        .update(verificationCodes)
        .set({ attempts: sql`${verificationCodes.attempts} + 1` })
        .where(eq(verificationCodes.id, row.id))
        .returning({ attempts: verificationCodes.attempts });
      const left = MAX_ATTEMPTS - (after?.attempts ?? MAX_ATTEMPTS);
      if (left <= 0) throw new AppError('SMS_CODE_LOCKED');
      throw new AppError('SMS_CODE_WRONG', `还可尝试 ${left} 次`);
    }
    return row.id;
  }

  /**
   * Spends a verified code inside the caller's transaction, so it is used up only if the
   * caller's change commits. Loses cleanly to a concurrent request that spent it first.
   */
  async consume(codeId: string, exec: Executor) {
    const used = await exec
      .update(verificationCodes)
      .set({ consumedAt: this.deps.clock.now() })
      .where(and(eq(verificationCodes.id, codeId), isNull(verificationCodes.consumedAt), lt(verificationCodes.attempts, MAX_ATTEMPTS)))
      .returning({ id: verificationCodes.id });
    if (used.length === 0) throw new AppError('SMS_CODE_EXPIRED');
  }

  private hash(id: string, code: string) {
    return createHmac('sha256', this.deps.secret).update(`${id}:${code}`).digest('base64url');
  }
}
