export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** The verification code carried, if any (the outbox shows it separately). */
  code?: string;
}

export interface MailDriver {
  readonly name: string;
  readonly embedded: boolean;
  send(message: MailMessage): Promise<void>;
}
