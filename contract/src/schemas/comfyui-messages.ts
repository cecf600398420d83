/**
 * ComfyUI's WebSocket messages (/ws) as a ComfyUI backend sends them about a run, and the per-node
 * state the console keeps from them (what /comfyui shows while a workflow runs).
 */
import { z } from 'zod';

export const comfyWsMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('status'),
    data: z.object({ status: z.object({ exec_info: z.object({ queue_remaining: z.number() }) }), sid: z.string().optional() }),
  }),
  z.object({ type: z.literal('execution_start'), data: z.object({ prompt_id: z.string(), timestamp: z.number().optional() }) }),
  z.object({ type: z.literal('execution_cached'), data: z.object({ prompt_id: z.string(), nodes: z.array(z.string()) }) }),
  z.object({
    type: z.literal('executing'),
    data: z.object({ prompt_id: z.string(), node: z.string().nullable(), display_node: z.string().nullable().optional() }),
  }),
  z.object({ type: z.literal('progress'), data: z.object({ prompt_id: z.string(), node: z.string().nullable(), value: z.number(), max: z.number() }) }),
  z.object({
    type: z.literal('executed'),
    data: z.object({
      prompt_id: z.string(),
      node: z.string(),
      display_node: z.string().optional(),
      output: z.object({ images: z.array(z.object({ filename: z.string(), subfolder: z.string(), type: z.string() })).optional() }).nullable(),
    }),
  }),
  z.object({ type: z.literal('execution_success'), data: z.object({ prompt_id: z.string(), timestamp: z.number().optional() }) }),
  z.object({
    type: z.literal('execution_error'),
    data: z.object({ prompt_id: z.string(), node_id: z.string(), node_type: z.string(), exception_message: z.string(), exception_type: z.string().optional() }),
  }),
  z.object({
    type: z.literal('execution_interrupted'),
    data: z.object({ prompt_id: z.string(), node_id: z.string().optional(), node_type: z.string().optional() }),
  }),
]);
export type ComfyWsMessage = z.infer<typeof comfyWsMessageSchema>;

/** Where each node of a run is, from the messages so far (what the page shows). */
export const comfyRunStateSchema = z.object({
  /** The node running now (null: none). */
  executing: z.string().nullable(),
  /** Its sampling progress (KSampler's steps). */
  progress: z.object({ node: z.string(), value: z.number().int(), max: z.number().int() }).nullable(),
  /** Nodes finished, in the order they finished (cached ones included). */
  executed: z.array(z.string()),
  error: z.object({ node: z.string(), nodeType: z.string(), message: z.string() }).nullable(),
});
export type ComfyRunState = z.infer<typeof comfyRunStateSchema>;
export const EMPTY_COMFY_RUN_STATE: ComfyRunState = { executing: null, progress: null, executed: [], error: null };

/** The run's state after one more message. */
export function foldComfyMessage(s: ComfyRunState, m: ComfyWsMessage): ComfyRunState {
  switch (m.type) {
    case 'execution_start':
      return EMPTY_COMFY_RUN_STATE;
    case 'execution_cached':
      return { ...s, executed: [...s.executed, ...m.data.nodes.filter((n) => !s.executed.includes(n))] };
    case 'executing': {
      const finished = s.executing && !s.executed.includes(s.executing) ? [...s.executed, s.executing] : s.executed;
      return { ...s, executing: m.data.node, progress: null, executed: finished };
    }
    case 'progress':
      return m.data.node ? { ...s, progress: { node: m.data.node, value: m.data.value, max: m.data.max } } : s;
    case 'executed':
      return s.executed.includes(m.data.node) ? s : { ...s, executed: [...s.executed, m.data.node] };
    case 'execution_error':
      return { ...s, executing: null, progress: null, error: { node: m.data.node_id, nodeType: m.data.node_type, message: m.data.exception_message } };
    default:
      return s;
  }
}

/**
 * The state of a run the backend reported finished: nothing executes any more. Its closing
 * `executing: null` message may arrive after the history said the run was over, or not at all.
 */
export function finishedComfyRun(s: ComfyRunState): ComfyRunState {
  return s.executing === null ? s : foldComfyMessage(s, { type: 'executing', data: { prompt_id: '', node: null } });
}
