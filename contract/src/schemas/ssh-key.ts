/**
 * SSH public keys of 账号中心 (API.meSshKeys): a key the user adds logs into the SSH gateway of
 * every instance the user may manage, without the instance's password.
 */
import { z } from 'zod';

/** Keys one account may hold. */
export const SSH_KEYS_PER_USER = 20;

export const sshKeySchema = z.object({
  id: z.uuid(),
  name: z.string(),
  /** The key's type as OpenSSH writes it: ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256… */
  algorithm: z.string(),
  /** OpenSSH's SHA256 fingerprint (what `ssh-keygen -lf key.pub` prints). */
  fingerprint: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});

export const sshKeyListSchema = z.object({ items: z.array(sshKeySchema) });

export const sshKeyCreateSchema = z.object({
  name: z.string({ error: '请填写名称' }).trim().min(1, { error: '请填写名称' }).max(50, { error: '名称最多 50 个字符' }),
  /** One line of a `.pub` file: `<type> <base64> [comment]`. */
  publicKey: z.string({ error: '请粘贴公钥' }).trim().min(1, { error: '请粘贴公钥' }).max(16_384, { error: '公钥过长' }),
});

export const sshKeyIdParamsSchema = z.object({ id: z.uuid({ error: '公钥 ID 格式不正确' }) });

export type SshKey = z.infer<typeof sshKeySchema>;
export type SshKeyCreate = z.infer<typeof sshKeyCreateSchema>;
