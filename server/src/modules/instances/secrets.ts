/**
 * Instance passwords: the console shows them to their owner (as every GPU cloud does), so they are
 * stored encrypted under a server secret rather than hashed.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export class PasswordBox {
  constructor(private key: Buffer) {}

  seal(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return [iv, c.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
  }

  open(sealed: string): string {
    const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    const d = createDecipheriv('aes-256-gcm', this.key, iv!);
    d.setAuthTag(tag!);
    return Buffer.concat([d.update(body!), d.final()]).toString('utf8');
  }
}

/** 16 characters from letters and digits without look-alikes, at least one of each kind. */
export function newMachinePassword(): string {
  const letters = 'abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ';
  const digits = '23456789';
  const all = letters + digits;
  const bytes = randomBytes(16);
  const chars = [...bytes].map((b) => all[b % all.length]!);
  chars[0] = letters[bytes[0]! % letters.length]!;
  chars[1] = digits[bytes[1]! % digits.length]!;
  return chars.join('');
}
