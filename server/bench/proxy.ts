/**
 * The gateway benchmark's floor: a bare pass-through proxy in its own process (node:http, no
 * parsing, no auth, no money) in front of the same upstream. What it adds is what any extra HTTP hop
 * costs on this machine; the gateway is judged against the direct upstream, this is printed beside it.
 * Prints its base URL on stdout.
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const target = new URL(process.env.BENCH_PROXY_TARGET ?? 'http://127.0.0.1:1/v1');
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createServer((req, res) => {
  const up = request(
    { host: target.hostname, port: target.port, path: target.pathname + (req.url ?? '').replace(/^\/v1/, ''), method: req.method, headers: req.headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  up.on('error', () => res.destroy());
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` })));
process.on('SIGTERM', () => process.exit(0));
