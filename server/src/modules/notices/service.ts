/**
 * Notices that arrive (DESIGN.md "Outside worlds": notices). Every producer — billing, expiry,
 * release, the "有卡时通知我" job, the instance core — calls `send` with a typed notice (kinds.ts).
 * The 站内信 row is written always, once per occasion (user, kind, subject, period: a unique key,
 * so a repeated or concurrent tick sends nothing twice); then the notice goes by SMS and by e-mail
 * as the user's preferences for its kind say (NOTICE_DEFAULTS when unset). A provider SMS needs a
 * template per kind (ALIYUN_SMS_NOTICE_TEMPLATES): a kind without one goes by e-mail and 站内信
 * only, and the server says so in its log once.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import {
  NOTICE_DEFAULTS,
  NOTICE_KINDS,
  NoticeKindDescription,
  NoticeKindLabel,
  type NoticeKind,
  type NoticeMessage,
  type NoticeMessagePage,
  type NoticePreferences,
  type NoticePreferencesUpdate,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import type { MailDriver } from '../../drivers/mail/types.js';
import type { SmsDriver } from '../../drivers/sms/types.js';
import { AppError } from '../../http/errors.js';
import type { UserRow } from '../users/index.js';
import { noticeFlags, noticeMessages, noticePreferences, type Delivery } from './schema.js';
import { notices, type Notice } from './kinds.js';

type MessageRow = typeof noticeMessages.$inferSelect;

export interface NoticeDeps {
  db: Db;
  clock: Clock;
  sms: SmsDriver;
  mail: MailDriver;
  /** Where a notice's SMS and e-mail go. */
  findUser: (id: string) => Promise<UserRow | undefined>;
  /** The provider SMS template of each kind (config ALIYUN_SMS_NOTICE_TEMPLATES). */
  smsTemplates: Partial<Record<NoticeKind, string>>;
  /** How links in e-mails begin (config PUBLIC_BASE_URL). */
  publicBaseUrl: string;
  log: FastifyBaseLogger;
}

/** One payer's balance against what their running post-paid instances cost per hour, after a billing tick. */
export interface PayerLoad {
  userId: string;
  spendable: bigint;
  hourly: bigint;
}

export class NoticeService {
  /** Kinds whose missing SMS template this process has already reported. */
  private reportedNoTemplate = new Set<NoticeKind>();

  constructor(private deps: NoticeDeps) {}

  // --- sending ------------------------------------------------------------------------------

  /**
   * Sends a notice to a user: the 站内信, then SMS and e-mail per the user's preferences. Returns
   * false, sending nothing, when this occasion was sent before. Never throws for a channel's failure
   * (the row records how each channel went).
   */
  async send(userId: string, n: Notice): Promise<boolean> {
    const id = randomUUID();
    const [row] = await this.deps.db
      .insert(noticeMessages)
      .values({
        id,
        userId,
        kind: n.kind,
        title: n.title,
        body: n.body,
        link: n.link ?? null,
        subject: n.subject ?? null,
        period: n.period ?? null,
        createdAt: this.deps.clock.now(),
      })
      .onConflictDoNothing()
      .returning({ id: noticeMessages.id });
    if (!row) return false;
    const [user, channels] = await Promise.all([this.deps.findUser(userId), this.channelsOf(userId, n.kind)]);
    const sms = await this.bySms(user, n, channels.sms);
    const mail = await this.byMail(user, n, channels.mail);
    await this.deps.db.update(noticeMessages).set({ sms, mail }).where(eq(noticeMessages.id, id));
    return true;
  }

  private async bySms(user: UserRow | undefined, n: Notice, wanted: boolean): Promise<Delivery> {
    if (!wanted) return 'off';
    if (!user?.mobile || user.disabled) return 'no-address';
    const driver = this.deps.sms;
    const templateCode = this.deps.smsTemplates[n.kind] ?? null;
    if (!driver.sendNotice || (!driver.embedded && !templateCode)) {
      if (!this.reportedNoTemplate.has(n.kind)) {
        this.reportedNoTemplate.add(n.kind);
        this.deps.log.warn(
          { kind: n.kind, driver: driver.name },
          `「${NoticeKindLabel[n.kind]}」没有配置短信模板（ALIYUN_SMS_NOTICE_TEMPLATES 中的 ${n.kind}=模板编号），这类通知只发邮件和站内信`,
        );
      }
      return 'no-template';
    }
    try {
      await driver.sendNotice({ to: user.mobile, kind: n.kind, templateCode, params: n.params, text: `【算力云】${n.body}` });
      return 'sent';
    } catch (e) {
      this.deps.log.warn({ kind: n.kind, userId: user.id, err: (e as Error).message }, 'notice SMS not sent');
      return 'failed';
    }
  }

  private async byMail(user: UserRow | undefined, n: Notice, wanted: boolean): Promise<Delivery> {
    if (!wanted) return 'off';
    if (!user?.email || user.disabled) return 'no-address';
    const link = n.link ? `\n\n查看详情：${this.deps.publicBaseUrl}${n.link}` : '';
    try {
      await this.deps.mail.send({
        to: user.email,
        subject: `【算力云】${n.title}`,
        text: `${n.body}${link}\n\n通知设置可在控制台「账号中心 - 消息通知」中修改。`,
      });
      return 'sent';
    } catch (e) {
      this.deps.log.warn({ kind: n.kind, userId: user.id, err: (e as Error).message }, 'notice mail not sent');
      return 'failed';
    }
  }

  /** Of these occasions of `kind`, the ones already sent, as "subject|period". */
  async sentOccasions(kind: NoticeKind, occasions: { userId: string; subject: string; period: string }[]): Promise<Set<string>> {
    if (!occasions.length) return new Set();
    const rows = await this.deps.db
      .select({ userId: noticeMessages.userId, subject: noticeMessages.subject, period: noticeMessages.period })
      .from(noticeMessages)
      .where(
        and(
          eq(noticeMessages.kind, kind),
          inArray(noticeMessages.userId, [...new Set(occasions.map((o) => o.userId))]),
          inArray(noticeMessages.subject, [...new Set(occasions.map((o) => o.subject))]),
        ),
      );
    return new Set(rows.map((r) => `${r.subject}|${r.period}`));
  }

  /**
   * After a billing tick: a payer whose spendable balance would not pay their running post-paid
   * instances for `hours` hours is told once; the flag clears when the balance covers them again
   * (a recharge, or fewer instances running), so the next drop is told again.
   */
  async balanceCheck(loads: PayerLoad[], hours: number): Promise<number> {
    const low = loads.filter((l) => l.hourly > 0n && l.spendable < l.hourly * BigInt(hours));
    const lowIds = new Set(low.map((l) => l.userId));
    const fine = loads.filter((l) => !lowIds.has(l.userId)).map((l) => l.userId);
    if (fine.length) await this.deps.db.delete(noticeFlags).where(and(eq(noticeFlags.kind, 'BalanceLow'), inArray(noticeFlags.userId, fine)));
    let sent = 0;
    for (const l of low) {
      const since = this.deps.clock.now();
      const [raised] = await this.deps.db
        .insert(noticeFlags)
        .values({ userId: l.userId, kind: 'BalanceLow', raisedAt: since })
        .onConflictDoNothing()
        .returning({ userId: noticeFlags.userId });
      if (raised && (await this.send(l.userId, notices.balanceLow({ spendable: l.spendable, hourly: l.hourly, hours, since })))) sent++;
    }
    return sent;
  }

  // --- the message center -------------------------------------------------------------------

  async list(userId: string, q: { page: number; pageSize: number; unread?: 'true' | 'false' }): Promise<NoticeMessagePage> {
    const where = and(eq(noticeMessages.userId, userId), q.unread === 'true' ? isNull(noticeMessages.readAt) : undefined);
    const [rows, [total]] = await Promise.all([
      this.deps.db
        .select()
        .from(noticeMessages)
        .where(where)
        .orderBy(desc(noticeMessages.createdAt), desc(noticeMessages.id))
        .limit(q.pageSize)
        .offset((q.page - 1) * q.pageSize),
      this.deps.db.select({ n: count() }).from(noticeMessages).where(where),
    ]);
    return { items: rows.map(toDto), total: total?.n ?? 0, page: q.page, pageSize: q.pageSize };
  }

  async unreadCount(userId: string): Promise<number> {
    const [row] = await this.deps.db
      .select({ n: count() })
      .from(noticeMessages)
      .where(and(eq(noticeMessages.userId, userId), isNull(noticeMessages.readAt)));
    return row?.n ?? 0;
  }

  /** Marks one of the user's messages read (again: unchanged); another's or none is 40400004. */
  async markRead(userId: string, id: string): Promise<NoticeMessage> {
    await this.deps.db
      .update(noticeMessages)
      .set({ readAt: this.deps.clock.now() })
      .where(and(eq(noticeMessages.id, id), eq(noticeMessages.userId, userId), isNull(noticeMessages.readAt)));
    const [row] = await this.deps.db
      .select()
      .from(noticeMessages)
      .where(and(eq(noticeMessages.id, id), eq(noticeMessages.userId, userId)));
    if (!row) throw new AppError('RECORD_NOT_FOUND', '该消息不存在或不属于当前账号');
    return toDto(row);
  }

  async markAllRead(userId: string): Promise<number> {
    const rows = await this.deps.db
      .update(noticeMessages)
      .set({ readAt: this.deps.clock.now() })
      .where(and(eq(noticeMessages.userId, userId), isNull(noticeMessages.readAt)))
      .returning({ id: noticeMessages.id });
    return rows.length;
  }

  // --- preferences --------------------------------------------------------------------------

  private async channelsOf(userId: string, kind: NoticeKind): Promise<{ sms: boolean; mail: boolean }> {
    const [row] = await this.deps.db
      .select({ sms: noticePreferences.sms, mail: noticePreferences.mail })
      .from(noticePreferences)
      .where(and(eq(noticePreferences.userId, userId), eq(noticePreferences.kind, kind)));
    return row ?? NOTICE_DEFAULTS[kind];
  }

  async preferences(userId: string): Promise<NoticePreferences> {
    const [user, rows] = await Promise.all([
      this.deps.findUser(userId),
      this.deps.db.select().from(noticePreferences).where(eq(noticePreferences.userId, userId)),
    ]);
    const chosen = new Map(rows.map((r) => [r.kind, r]));
    return {
      items: NOTICE_KINDS.map((kind) => {
        const c = chosen.get(kind) ?? NOTICE_DEFAULTS[kind];
        return { kind, label: NoticeKindLabel[kind], description: NoticeKindDescription[kind], site: true as const, sms: c.sms, mail: c.mail };
      }),
      mobile: user?.mobile ?? null,
      email: user?.email ?? null,
    };
  }

  async setPreferences(userId: string, update: NoticePreferencesUpdate): Promise<NoticePreferences> {
    const now = this.deps.clock.now();
    await this.deps.db
      .insert(noticePreferences)
      .values(update.items.map((i) => ({ userId, kind: i.kind, sms: i.sms, mail: i.mail, updatedAt: now })))
      .onConflictDoUpdate({
        target: [noticePreferences.userId, noticePreferences.kind],
        set: { sms: sql`excluded.sms`, mail: sql`excluded.mail`, updatedAt: now },
      });
    return this.preferences(userId);
  }
}

function toDto(r: MessageRow): NoticeMessage {
  return { id: r.id, kind: r.kind, title: r.title, body: r.body, link: r.link, createdAt: r.createdAt.toISOString(), readAt: r.readAt?.toISOString() ?? null };
}
