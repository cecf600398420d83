/**
 * The embedded SMS and mail drivers: instead of a phone or a mailbox, messages land in the
 * `outbox` table and the server log, where a developer, a script or a browser test reads them.
 */
import { and, desc, eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/client.js';
import { outbox } from './outbox-schema.js';
import type { MailDriver, MailMessage } from './mail/types.js';
import type { SmsDriver, SmsMessage, SmsNotice } from './sms/types.js';

export class OutboxSmsDriver implements SmsDriver {
  readonly name = 'outbox';
  readonly embedded = true;
  constructor(
    private db: Db,
    private log: FastifyBaseLogger,
    private clock: Clock,
  ) {}
  async send(m: SmsMessage) {
    await this.db.insert(outbox).values({ to: m.to, channel: 'sms', text: m.text, code: m.code, createdAt: this.clock.now() });
    this.log.info({ to: m.to, code: m.code, scene: m.scene }, `[短信发件箱] 发往 ${m.to}：${m.text}`);
  }
  /** A notice as the phone would show it (no template needed: the text is recorded). */
  async sendNotice(n: SmsNotice) {
    await this.db.insert(outbox).values({ to: n.to, channel: 'sms', text: n.text, code: '', createdAt: this.clock.now() });
    this.log.info({ to: n.to, kind: n.kind, templateCode: n.templateCode, params: n.params }, `[短信发件箱] 通知发往 ${n.to}：${n.text}`);
  }
}

export class OutboxMailDriver implements MailDriver {
  readonly name = 'outbox';
  readonly embedded = true;
  constructor(
    private db: Db,
    private log: FastifyBaseLogger,
    private clock: Clock,
  ) {}
  async send(m: MailMessage) {
    await this.db.insert(outbox).values({ to: m.to, channel: 'email', text: `${m.subject}\n${m.text}`, code: m.code ?? '', createdAt: this.clock.now() });
    this.log.info({ to: m.to, code: m.code }, `[邮件发件箱] 发往 ${m.to}：${m.subject}`);
  }
}

export async function readOutbox(db: Db, to: string, limit = 20) {
  const rows = await db
    .select()
    .from(outbox)
    .where(and(eq(outbox.to, to)))
    .orderBy(desc(outbox.id))
    .limit(limit);
  return rows.map((r) => ({ to: r.to, channel: r.channel, text: r.text, code: r.code, createdAt: r.createdAt.toISOString() }));
}
