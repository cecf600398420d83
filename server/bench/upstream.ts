/**
 * The gateway benchmark's upstream, in its own process: the embedded model served over HTTP as an
 * OpenAI-compatible provider (drivers/model-upstream/serve.ts). Prints its base URL on stdout.
 */
import { EmbeddedUpstream, serveUpstream } from '../src/drivers/model-upstream/index.js';

const tokensPerSecond = Number(process.env.BENCH_UPSTREAM_TPS ?? 200);
const upstream = new EmbeddedUpstream({ models: ['bench-chat'], tokensPerSecond });
const { baseUrl, close } = await serveUpstream(upstream);
console.log(JSON.stringify({ baseUrl }));
process.on('SIGTERM', () => void close().then(() => process.exit(0)));
process.on('SIGINT', () => void close().then(() => process.exit(0)));
