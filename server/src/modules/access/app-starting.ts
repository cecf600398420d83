/**
 * The 启动中 page of a 镜像应用 (issue 30 §3): what 打开应用 shows while the application inside the
 * machine does not answer on its port yet, instead of a bad gateway. It reloads itself, and the
 * application appears as soon as it answers. It says what is happening and what to do if it takes
 * long (the log inside the machine, a restart); an application that keeps exiting is said to, with
 * the end of its log. One self-contained document in the console's purple, nothing fetched.
 */
import type { MachineAppState } from '../../drivers/compute/types.js';

/** How often the page reloads itself, in seconds. */
export const APP_STARTING_REFRESH_SECONDS = 3;
/** From how many exits the page says the application keeps failing (once may be a first-run setup). */
export const CRASH_EXITS = 3;

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:14px/1.7 -apple-system,"PingFang SC","Microsoft YaHei",sans-serif;background:#f4f0fb;color:#262626}
header{background:#722ed1;color:#fff;padding:14px 20px;font-size:16px;font-weight:600}
main{max-width:760px;margin:24px auto;padding:0 16px}
.card{background:#fff;border-radius:10px;box-shadow:0 2px 10px rgba(114,46,209,.12);padding:24px}
h1{font-size:20px;margin:0 0 8px;color:#531dab}h1.failed{color:#cf1322}
.spin{display:inline-block;width:14px;height:14px;margin-right:8px;border:2px solid #d3adf7;border-top-color:#722ed1;border-radius:50%;animation:s 1s linear infinite;vertical-align:-2px}
@keyframes s{to{transform:rotate(360deg)}}
ul{padding-left:20px;margin:8px 0}code{background:#f9f0ff;color:#531dab;padding:1px 5px;border-radius:4px}
pre{background:#1f1f1f;color:#e8e8e8;padding:12px;border-radius:6px;max-height:360px;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
.note{color:#8c8c8c;font-size:12px;margin-top:16px}`;

/** The page for the application's state now (ComputeDriver.app's state). */
export function appStartingPage(state: MachineAppState, appName: string | null = null): string {
  const name = escapeHtml(appName ?? '镜像应用');
  const failing = state.exits >= CRASH_EXITS;
  const heading = failing ? `<h1 class="failed">${name}反复退出（已退出 ${state.exits} 次）</h1>` : `<h1><span class="spin"></span>${name}正在启动</h1>`;
  const status = failing
    ? `<p>应用启动后很快就退出了，控制台会继续自动重新启动它，每次间隔更长（最长 30 秒）。多半是应用本身出错：请根据下方日志排查。</p>`
    : `<p>实例已开机，应用正在实例内启动${state.running ? `（已运行 ${state.upSeconds} 秒）` : '，即将重新启动'}。它在 ${state.port} 端口开始应答后，本页会自动打开应用，无需操作。</p>` +
      (state.exits > 0 ? `<p>应用已退出 ${state.exits} 次，控制台正在重新启动它。</p>` : '');
  const log = state.logTail.trim()
    ? `<p>应用日志的最后几行（实例内 <code>/var/log/app.log</code>）：</p><pre>${escapeHtml(state.logTail)}</pre>`
    : '<p>应用日志（实例内 <code>/var/log/app.log</code>）暂无内容。</p>';
  return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="${APP_STARTING_REFRESH_SECONDS}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${failing ? '应用启动失败' : '应用启动中'}</title><style>${STYLE}</style></head>
<body><header>镜像应用</header><main><div class="card">
${heading}
${status}
<p>如果等了几分钟仍未打开：</p>
<ul><li>在控制台打开实例的<b>终端</b>，用 <code>tail -f /var/log/app.log</code> 查看应用日志；</li>
<li>或在控制台<b>重启</b>实例，应用会随实例重新启动。</li></ul>
${log}
<p class="note">本页每 ${APP_STARTING_REFRESH_SECONDS} 秒自动刷新一次。</p>
</div></main></body></html>`;
}
