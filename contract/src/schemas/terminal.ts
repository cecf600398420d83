/**
 * The web terminal's WebSocket (API.instanceTerminal). Out of the server: binary frames are the
 * shell's output, text frames are control messages; into the server: text frames, one message each.
 */
import { z } from 'zod';

export const terminalQuerySchema = z.object({
  cols: z.coerce.number({ error: '终端列数应为整数' }).int().min(10).max(500).default(80),
  rows: z.coerce.number({ error: '终端行数应为整数' }).int().min(5).max(200).default(24),
  /** Attach again to a shell this user left (the id from its `ready` message). */
  resume: z.uuid({ error: '终端 ID 格式不正确' }).optional(),
  /** The output offset the client has already received (with resume). */
  since: z.coerce.number().int().min(0).default(0),
});

export const terminalClientMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('input'), data: z.string().max(64 * 1024) }),
  z.object({ type: z.literal('resize'), cols: z.number().int().min(10).max(500), rows: z.number().int().min(5).max(200) }),
]);

export const terminalServerMessageSchema = z.discriminatedUnion('type', [
  /**
   * Attached: the shell's id (for a resume) and the offset its next output starts at; on a resume,
   * `lost` bytes of what it printed meanwhile were past the kept scrollback and are not replayed.
   */
  z.object({ type: z.literal('ready'), id: z.uuid(), offset: z.number().int(), resumed: z.boolean(), lost: z.number().int().min(0).default(0) }),
  /** The shell ended or was closed; the message says why and what to do. */
  z.object({ type: z.literal('closed'), message: z.string() }),
  /** A message from the client was refused (the shell goes on). */
  z.object({ type: z.literal('error'), message: z.string() }),
]);

export type TerminalClientMessage = z.infer<typeof terminalClientMessageSchema>;
export type TerminalServerMessage = z.infer<typeof terminalServerMessageSchema>;

/** WebSocket close codes the terminal uses: 4000 + the HTTP status of the reason. */
export const TERMINAL_CLOSE = { ended: 4000, unauthorized: 4401, forbidden: 4403, conflict: 4409 } as const;

/**
 * A console that is stopping (a new version rolling out, a replica scaled down) closes every
 * WebSocket — terminal, desktop, proxied services — with 1012 "Service Restart" and this reason:
 * the client connects again, and the load balancer sends it to a replica that stays.
 */
export const SOCKET_RESTART = { code: 1012, reason: 'console restarting' } as const;
