/**
 * The sandbox's scan page: what a payer's phone would show after scanning the QR code. One
 * self-contained HTML document (no console bundle, no external assets), so it also works when
 * opened on a phone on the same network.
 */
import { formatYuan, PaymentMethod } from '@console/contract';
import { pageCsp, scriptHash } from '../../http/security-headers.js';
import type { SandboxView } from './sandbox.js';

export const PAID_TEXT = '支付成功，请返回控制台查看';

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON safe inside a <script> element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

export function statusText(v: Pick<SandboxView, 'status' | 'closedReason'>): string {
  if (v.status === 'Succeeded') return PAID_TEXT;
  if (v.status === 'Pending') return '待支付';
  return v.closedReason === 'Expired' ? '交易已超时关闭' : '交易已关闭';
}

function notifyText(v: SandboxView): string {
  const n = v.trade.notify;
  if (v.status !== 'Succeeded') return '';
  if (n.deliveredAt) return '支付通知：已送达商户';
  if (!n.attempts) return '支付通知：发送中';
  return `支付通知：第 ${n.attempts} 次发送未被确认（${n.lastError ?? ''}），稍后重试`;
}

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:14px/1.6 -apple-system,"PingFang SC","Microsoft YaHei",sans-serif;background:#f4f0fb;color:#262626}
header{background:#722ed1;color:#fff;padding:14px 20px;font-size:16px;font-weight:600}
main{max-width:420px;margin:24px auto;padding:0 16px}
.card{background:#fff;border-radius:10px;box-shadow:0 2px 10px rgba(114,46,209,.12);padding:24px}
.amount{font-size:34px;font-weight:600;color:#531dab;text-align:center;margin:8px 0 4px}
.subject{text-align:center;color:#595959;margin-bottom:16px;word-break:break-all}
dl{display:grid;grid-template-columns:auto 1fr;gap:6px 12px;margin:0 0 20px}dt{color:#8c8c8c}dd{margin:0;word-break:break-all}
.status{font-weight:600;color:#531dab}.status.done{color:#389e0d}.status.closed{color:#8c8c8c}
.actions{display:flex;gap:12px}button{flex:1;height:40px;border-radius:6px;font-size:15px;cursor:pointer;border:1px solid #722ed1}
.pay{background:#722ed1;color:#fff}.pay:hover{background:#9254de}.cancel{background:#fff;color:#722ed1}
button:disabled{opacity:.5;cursor:not-allowed}
.msg{margin-top:14px;min-height:22px;text-align:center}.msg.err{color:#cf1322}
.note{margin-top:16px;color:#8c8c8c;font-size:12px;text-align:center}`;

const SCRIPT = `
const s = JSON.parse(document.getElementById('state').textContent);
const $ = (id) => document.getElementById(id);
const deadline = Date.now() + s.remainingMs;
function setStatus(text, cls) { const el = $('status'); el.textContent = text; el.className = 'status ' + (cls || ''); }
function finish(text, cls) { setStatus(text, cls); $('actions').remove(); clearInterval(timer); $('countdown').textContent = '-'; }
function tick() {
  const left = Math.max(0, deadline - Date.now());
  const m = Math.floor(left / 60000), sec = Math.floor(left / 1000) % 60;
  $('countdown').textContent = String(m).padStart(2, '0') + ':' + String(sec).padStart(2, '0');
  if (left === 0) finish('交易已超时关闭', 'closed');
}
async function act(path, doneText, cls) {
  for (const b of document.querySelectorAll('button')) b.disabled = true;
  const msg = $('msg'); msg.className = 'msg'; msg.textContent = '处理中…';
  try {
    const res = await fetch(location.pathname + '/' + path, { method: 'POST' });
    const body = await res.json();
    if (!res.ok) throw new Error(body.message + (body.detail ? '（' + body.detail + '）' : ''));
    msg.textContent = ''; finish(doneText, cls);
  } catch (e) {
    msg.className = 'msg err'; msg.textContent = e.message;
    for (const b of document.querySelectorAll('button')) b.disabled = false;
  }
}
let timer;
if (s.status === 'Pending') {
  timer = setInterval(tick, 1000); tick();
  $('pay').onclick = () => act('pay', ${JSON.stringify(PAID_TEXT)}, 'done');
  $('cancel').onclick = () => act('close', '交易已关闭', 'closed');
}`;

/** The scan page's Content-Security-Policy: the console's, plus exactly its one inline script. */
export const SCAN_PAGE_CSP = pageCsp({ scriptSrc: [scriptHash(SCRIPT)] });

export function scanPage(v: SandboxView): string {
  const t = v.trade;
  const label = PaymentMethod.label(t.method);
  const cls = v.status === 'Succeeded' ? 'done' : v.status === 'Closed' ? 'closed' : '';
  const actions =
    v.status === 'Pending'
      ? '<div class="actions" id="actions"><button class="pay" id="pay">确认支付</button><button class="cancel" id="cancel">取消</button></div>'
      : '';
  return `<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${label}收银台（沙箱）</title><style>${STYLE}</style></head>
<body><header>${label} · 收银台（沙箱）</header><main><div class="card">
<div class="amount">${formatYuan(t.amount, { symbol: true })}</div>
<div class="subject">${escapeHtml(t.subject)}</div>
<dl><dt>商户订单号</dt><dd>${escapeHtml(t.outTradeNo)}</dd>
<dt>剩余支付时间</dt><dd id="countdown">-</dd>
<dt>交易状态</dt><dd><span class="status ${cls}" id="status">${statusText(v)}</span></dd></dl>
${actions}<div class="msg" id="msg">${escapeHtml(notifyText(v))}</div>
<div class="note">这是内置支付沙箱，不会发生真实扣款。</div>
</div></main>
<script type="application/json" id="state">${scriptJson({ status: v.status, remainingMs: v.remainingMs })}</script>
<script>${SCRIPT}</script></body></html>`;
}

export function notFoundPage(outTradeNo: string): string {
  return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>交易不存在</title><style>${STYLE}</style></head><body><header>收银台（沙箱）</header><main><div class="card">
<div class="subject">交易不存在：${escapeHtml(outTradeNo)}</div><div class="note">请返回控制台重新发起支付。</div></div></main></body></html>`;
}
