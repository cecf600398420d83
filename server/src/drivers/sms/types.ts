/** Sends verification codes and notices by SMS. The embedded outbox is the default; production plugs a provider in. */
export interface SmsMessage {
  to: string;
  code: string;
  scene: string;
  /** The full text a person would read on their phone. */
  text: string;
}

/**
 * A notice by SMS. A provider sends only approved templates: `templateCode` is the one configured
 * for the notice's kind and `params` fill its variables (Aliyun SendSms TemplateCode and
 * TemplateParam). The embedded outbox, which needs no template, records `text`.
 */
export interface SmsNotice {
  to: string;
  /** The notice's kind (NoticeKind), for the log. */
  kind: string;
  /** The provider template for the kind; null only for the embedded outbox. */
  templateCode: string | null;
  params: Record<string, string>;
  /** The full text a person would read on their phone. */
  text: string;
}

export interface SmsDriver {
  readonly name: string;
  /** True only for the embedded outbox: /dev/outbox reads it, and it sends notices without templates. */
  readonly embedded: boolean;
  send(message: SmsMessage): Promise<void>;
  /** Sends a notice; a driver without it sends verification codes only (notices then go by e-mail and 站内信). */
  sendNotice?(notice: SmsNotice): Promise<void>;
}
