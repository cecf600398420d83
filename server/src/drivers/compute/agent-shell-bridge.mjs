// A shell on a machine behind a compute agent, as a local program (agent-channel.ts bridgeCommand):
// the console's web terminal and SSH gateway spawn it under their pty, or with pipes for a command,
// and it relays its tty (raw, with its window size) or its pipes over one signed channel to the
// agent, then exits with the command's status. Plain JavaScript so that it starts with node alone
// (no tsx: a terminal opens in a blink, and the echo's path has nothing compiled on the fly).
import { spawnSync } from 'node:child_process';
import WebSocket from 'ws';

const HIGH_WATER = 256 * 1024;
const LOW_WATER = 64 * 1024;
const STDERR = 2;

const url = process.env.AGENT_CHANNEL_URL;
const authorization = process.env.AGENT_CHANNEL_AUTHORIZATION;
if (!url || !authorization) {
  process.stderr.write('agent-shell-bridge: AGENT_CHANNEL_URL and AGENT_CHANNEL_AUTHORIZATION are required\n');
  process.exit(2);
}

const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY);
let status = null;
const ws = new WebSocket(url, { headers: { authorization }, perMessageDeflate: false });

ws.on('open', () => {
  const pty = tty ? { cols: process.stdout.columns || 80, rows: process.stdout.rows || 24 } : null;
  ws.send(JSON.stringify({ type: 'start', pty }));
  if (tty) {
    process.stdin.setRawMode(true);
    // Node's raw mode keeps the tty's output processing (\n → \r\n), which the machine's own pty has done already.
    spawnSync('stty', ['-opost'], { stdio: ['inherit', 'ignore', 'ignore'] });
    process.stdout.on('resize', () => send({ type: 'resize', cols: process.stdout.columns, rows: process.stdout.rows }));
  }
  process.stdin.on('data', (chunk) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(chunk, { binary: true }, () => ws.bufferedAmount < LOW_WATER && process.stdin.resume());
    if (ws.bufferedAmount > HIGH_WATER) process.stdin.pause();
  });
  process.stdin.on('end', () => send({ type: 'eof' }));
  // A tty that fails to read (EIO) has been hung up: the shell on the agent is hung up with it.
  process.stdin.on('error', () => tty && hangUp());
});

// The console closed our pty (the terminal ended, the replica stopping): end the channel, and with it the shell
// inside the machine and the jobs it started. Handled explicitly, since a console started with SIGHUP ignored
// (nohup, some supervisors) passes that on to us, and the channel — the machine's shell — then outlived its terminal.
process.on('SIGHUP', hangUp);
function hangUp() {
  ws.terminate();
  finish(129);
}

ws.on('message', (data, binary) => {
  if (!binary) {
    const m = JSON.parse(data.toString());
    if (m.type === 'exit') status = m.code;
    return;
  }
  const out = data[0] === STDERR ? process.stderr : process.stdout;
  if (!out.write(data.subarray(1))) {
    ws.pause();
    out.once('drain', () => ws.resume());
  }
});

ws.on('unexpected-response', (_req, res) => {
  process.stderr.write(res.statusCode === 404 ? '实例已不在运行中\r\n' : `无法连接实例所在的主机（HTTP ${res.statusCode}）\r\n`);
  finish(1);
});
ws.on('error', (e) => {
  process.stderr.write(`无法连接实例所在的主机（${e.message}）\r\n`);
  finish(1);
});
ws.on('close', () => finish(status ?? 1));

function send(m) {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
}

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  if (tty) process.stdin.setRawMode(false);
  process.exitCode = code;
  process.stdin.destroy();
  // Output still queued (a pipe's reader slower than the agent) goes out before the exit.
  process.stdout.end(() => process.exit(code));
}
