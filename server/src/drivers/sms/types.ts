/** Sends verification codes by SMS. The embedded outbox is the default; production plugs a provider in. */
export interface SmsMessage {
  to: string;
  code: string;
  scene: string;
  /** The full text a person would read on their phone. */
  text: string;
}

export interface SmsDriver {
  readonly name: string;
  /** True only for the embedded outbox: /dev/outbox reads it. */
  readonly embedded: boolean;
  send(message: SmsMessage): Promise<void>;
}
