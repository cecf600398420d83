/**
 * The requestId of a submit that spends money (a generation, a workflow run, a LoRA start): the same
 * for a retry of the same thing after a network error or a 5xx — it may have been made, and the
 * server then returns it instead of making another — and a new one after a refusal or a success.
 */
import { useRef } from 'react';
import type { ApiError } from './errors';

/** Whether a failed submit certainly made nothing: the server answered no. */
export const refusedByServer = (e: ApiError) => e.kind === 'http' && e.status >= 400 && e.status < 500;

export function useRequestAttempt() {
  const attempt = useRef<{ key: string; requestId: string } | null>(null);
  return {
    /** The requestId for a submit of `key` (what is submitted, or its version). */
    idFor: (key: string) => {
      if (attempt.current?.key !== key) attempt.current = { key, requestId: crypto.randomUUID() };
      return attempt.current.requestId;
    },
    succeeded: () => {
      attempt.current = null;
    },
    failed: (e: ApiError) => {
      if (refusedByServer(e)) attempt.current = null;
    },
  };
}
