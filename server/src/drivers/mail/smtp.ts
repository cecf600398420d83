import nodemailer, { type Transporter } from 'nodemailer';
import type { MailDriver, MailMessage } from './types.js';

/** Production mail: any SMTP server, e.g. smtps://user:pass@smtp.exmail.qq.com:465 */
export class SmtpMailDriver implements MailDriver {
  readonly name = 'smtp';
  readonly embedded = false;
  private transport: Transporter;
  constructor(
    url: string,
    private from: string,
  ) {
    this.transport = nodemailer.createTransport(url);
  }
  async send(m: MailMessage) {
    await this.transport.sendMail({ from: this.from, to: m.to, subject: m.subject, text: m.text });
  }
}
