/**
 * The embedded ComfyUI's own page (GET /): what an application instance's ComfyUI shows in the
 * browser. Real ComfyUI serves its node editor here; the embedded one serves a small editor of the
 * API-format graph that talks to the same endpoints (/prompt, /ws, /view, /interrupt, /queue).
 *
 * When the console session behind the machine origin ends, the API answers 401: inside the
 * console's frame the page then posts `redirect_login` to the parent (spec §8), as the console's
 * own pages do; opened on its own it says to log in again.
 */
import { defaultComfyGraph } from '@console/contract';

const SCRIPT = String.raw`
const $ = (id) => document.getElementById(id);
const clientId = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2)).replace(/-/g, '');
let promptId = null;
let graph = {};
const state = {};

function sessionEnded() {
  $('status').textContent = '登录已失效';
  if (window.parent !== window) window.parent.postMessage('redirect_login', '*');
  else $('notice').textContent = '控制台登录已失效：请回到控制台重新登录，再从实例列表打开 ComfyUI。';
}

async function call(path, init) {
  const res = await fetch(path, Object.assign({ credentials: 'same-origin', headers: { 'content-type': 'application/json' } }, init || {}));
  if (res.status === 401) { sessionEnded(); throw new Error('登录已失效'); }
  return res;
}

function renderNodes() {
  const list = $('nodes');
  list.innerHTML = '';
  for (const id of Object.keys(graph)) {
    const li = document.createElement('li');
    const s = state[id] || { label: '等待', cls: '' };
    li.className = s.cls;
    li.innerHTML = '<span class="id">#' + id + '</span> <span class="type"></span> <span class="state"></span>';
    li.querySelector('.type').textContent = graph[id].class_type;
    li.querySelector('.state').textContent = s.label;
    list.appendChild(li);
  }
}

function parseGraph() {
  try {
    const g = JSON.parse($('graph').value);
    if (!g || typeof g !== 'object' || Array.isArray(g) || Array.isArray(g.nodes)) throw new Error('需要 API 格式（Save (API Format) 导出的 JSON）');
    $('notice').textContent = '';
    return g;
  } catch (e) {
    $('notice').textContent = '工作流 JSON 无法解析：' + e.message;
    return null;
  }
}

async function queue() {
  const g = parseGraph();
  if (!g) return;
  graph = g;
  for (const k of Object.keys(state)) delete state[k];
  renderNodes();
  const res = await call('prompt', { method: 'POST', body: JSON.stringify({ prompt: g, client_id: clientId }) });
  const body = await res.json();
  if (res.status !== 200) {
    const details = Object.entries(body.node_errors || {}).map(([n, e]) => '#' + n + '：' + (e.errors || []).map((x) => x.message).join('；'));
    $('notice').textContent = '无法运行：' + [body.error && body.error.message].concat(details).filter(Boolean).join(' / ');
    return;
  }
  promptId = body.prompt_id;
  $('notice').textContent = '已加入队列（' + promptId.slice(0, 8) + '）';
}

function onMessage(m) {
  if (m.type === 'status') { $('queue').textContent = '队列：' + m.data.status.exec_info.queue_remaining; return; }
  if (!m.data || m.data.prompt_id !== promptId) return;
  if (m.type === 'executing') {
    for (const [id, s] of Object.entries(state)) if (s.cls === 'running') state[id] = { label: '已完成', cls: 'done' };
    if (m.data.node) state[m.data.node] = { label: '运行中', cls: 'running' };
    else $('notice').textContent = '运行结束';
  } else if (m.type === 'progress' && m.data.node) {
    state[m.data.node] = { label: '采样 ' + m.data.value + '/' + m.data.max, cls: 'running' };
  } else if (m.type === 'executed') {
    state[m.data.node] = { label: '已完成', cls: 'done' };
    for (const img of (m.data.output && m.data.output.images) || []) {
      const a = document.createElement('a');
      const src = 'view?' + new URLSearchParams({ filename: img.filename, subfolder: img.subfolder, type: img.type });
      a.href = src; a.target = '_blank';
      a.innerHTML = '<img alt="">';
      a.querySelector('img').src = src;
      $('outputs').prepend(a);
    }
  } else if (m.type === 'execution_error') {
    state[m.data.node_id] = { label: '出错：' + m.data.exception_message, cls: 'error' };
  } else if (m.type === 'execution_interrupted') {
    $('notice').textContent = '已中断';
  }
  renderNodes();
}

function connect() {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws?clientId=' + clientId);
  ws.onopen = () => ($('status').textContent = '已连接');
  ws.onmessage = (e) => { if (typeof e.data === 'string') onMessage(JSON.parse(e.data)); };
  ws.onclose = async () => {
    $('status').textContent = '连接已断开';
    // Closed because the session ended? The API says so with 401; otherwise try again.
    try { await call('queue'); setTimeout(connect, 2000); } catch (_) {}
  };
}

$('run').onclick = () => void queue().catch((e) => ($('notice').textContent = e.message));
$('interrupt').onclick = () => void call('interrupt', { method: 'POST', body: '{}' }).catch(() => {});
$('format').onclick = () => { const g = parseGraph(); if (g) $('graph').value = JSON.stringify(g, null, 2); };
$('file').onchange = async (e) => { const f = e.target.files[0]; if (f) { $('graph').value = await f.text(); const g = parseGraph(); if (g) { graph = g; renderNodes(); } } };
graph = parseGraph() || {};
renderNodes();
connect();
`;

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:14px/1.5 -apple-system,"PingFang SC","Noto Sans CJK SC","Microsoft YaHei",sans-serif;background:#f5f3ff;color:#1f1f1f}
header{display:flex;gap:16px;align-items:center;padding:10px 16px;background:#6d28d9;color:#fff}header b{font-size:16px}header span{opacity:.85;font-size:12px}
main{display:grid;grid-template-columns:minmax(320px,1fr) 360px;gap:12px;padding:12px;height:calc(100vh - 46px)}
section{background:#fff;border:1px solid #e9e3ff;border-radius:8px;padding:12px;display:flex;flex-direction:column;min-height:0}
textarea{flex:1;width:100%;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;border:1px solid #d9d9d9;border-radius:6px;padding:8px;resize:none}
.bar{display:flex;gap:8px;margin-bottom:8px;flex-wrap:wrap;align-items:center}
button,label.file{background:#7c3aed;color:#fff;border:0;border-radius:6px;padding:5px 14px;cursor:pointer;font-size:13px}
button.ghost,label.file{background:#fff;color:#6d28d9;border:1px solid #c4b5fd}
label.file input{display:none}#notice{color:#6d28d9;min-height:20px;font-size:13px}
ul{list-style:none;margin:0;padding:0;overflow:auto}li{padding:4px 6px;border-radius:4px;font-size:13px;display:flex;gap:6px}
li .id{color:#8c8c8c;width:36px}li .type{flex:1}li.running{background:#ede9fe}li.done .state{color:#389e0d}li.error{background:#fff1f0;color:#cf1322}
#outputs{display:grid;grid-template-columns:repeat(2,1fr);gap:6px;overflow:auto;margin-top:8px}#outputs img{width:100%;border-radius:6px;display:block}
h3{margin:0 0 6px;font-size:14px}
`;

export const EDITOR_PAGE = `<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>ComfyUI</title><style>${STYLE}</style></head>
<body>
<header><b>ComfyUI</b><span id="status">连接中…</span><span id="queue">队列：0</span></header>
<main>
<section>
<div class="bar"><button id="run">运行（Queue Prompt）</button><button class="ghost" id="interrupt">中断</button><button class="ghost" id="format">格式化</button>
<label class="file">载入 JSON<input id="file" type="file" accept=".json,application/json"></label></div>
<div id="notice"></div>
<textarea id="graph" spellcheck="false">${JSON.stringify(defaultComfyGraph(), null, 2).replace(/&/g, '&amp;').replace(/</g, '&lt;')}</textarea>
</section>
<section><h3>节点</h3><ul id="nodes"></ul><h3 style="margin-top:12px">输出</h3><div id="outputs"></div></section>
</main>
<script>${SCRIPT}</script>
</body></html>`;
