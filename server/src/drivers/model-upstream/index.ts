/**
 * Model upstreams (issue 14): the embedded n-gram model, any OpenAI-compatible HTTP endpoint, and the
 * channel router over them, and an HTTP server around any upstream (serve.ts). The model module's
 * gateway routes through the router.
 */
export { EmbeddedUpstream, embedTokens, realPacer, type EmbeddedModelSpec, type EmbeddedUpstreamOptions, type Pacer } from './embedded.js';
export { HttpUpstream, type HttpUpstreamOptions } from './http.js';
export { answerFromUpstream, serveUpstream } from './serve.js';
export { corpusModel, NgramModel } from './ngram.js';
export { ChannelRouter, type Channel, type ChannelHealth, type ChannelRouterOptions, type Routed } from './router.js';
export { chatPromptTokens, countTokens, decode, encode, messageText } from './tokens.js';
export {
  GeneratorStream,
  UpstreamError,
  isRetryableStatus,
  isUpstreamStream,
  type AttemptRecord,
  type ChatResult,
  type CompletionResult,
  type ModelUpstream,
  type UpstreamErrorKind,
  type UpstreamStream,
} from './types.js';
