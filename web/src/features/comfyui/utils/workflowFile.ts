/** Workflow JSON in and out: what an imported file or the JSON tab holds, and the file 导出 JSON saves. */
import { comfyGraphSchema, type ComfyGraph } from '@console/contract';
import { nodeSpecOf, sortNodeIds } from '../components/comfyViews';

export type ParsedGraph = { ok: true; graph: ComfyGraph } | { ok: false; title: string; detail: string };

/** What to tell someone who exported the graph ComfyUI draws instead of the one it runs. */
export const UI_FORMAT_HELP =
  '这是 ComfyUI 画布的保存格式（含 nodes 和 links），不是可运行的 API 格式。请在 ComfyUI 中打开该工作流：旧版界面先在设置（⚙）中勾选 “Enable Dev mode Options”，再点菜单中的 “Save (API Format)”；新版界面用菜单 “工作流 → 导出 (API)”（Workflow → Export (API)）。然后导入导出的 JSON 文件。';

/** ComfyUI's UI format (what "Save" writes): the canvas with its nodes and links, not the graph it runs. */
export function isUiFormat(value: unknown): boolean {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.nodes) && Array.isArray(v.links);
}

/** The graph in `text`, or why it is not one in words the user can act on. */
export function parseGraphJson(text: string): ParsedGraph {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, title: '不是有效的 JSON', detail: e instanceof Error ? e.message : String(e) };
  }
  if (isUiFormat(value)) return { ok: false, title: '这是 ComfyUI 的界面格式，请用 “Save (API Format)” 导出', detail: UI_FORMAT_HELP };
  const parsed = comfyGraphSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length ? `（位置：${issue.path.map(String).join('.')}）` : '';
    return { ok: false, title: '不是 ComfyUI API 格式的工作流', detail: `${issue?.message ?? '格式不正确'}${where}` };
  }
  return { ok: true, graph: parsed.data };
}

/**
 * The JSON as ComfyUI writes it: two-space indent, each node's inputs then class_type then _meta.
 * In the order people read it: nodes by id, inputs in the node's own order, a link on one line (["4", 0]).
 */
export function prettyGraph(graph: ComfyGraph): string {
  const ordered: Record<string, unknown> = {};
  for (const id of sortNodeIds(Object.keys(graph))) {
    const { inputs, class_type, ...rest } = graph[id]!;
    const known = Object.keys(nodeSpecOf(class_type)?.inputs ?? {}).filter((k) => k in inputs);
    const names = [...known, ...Object.keys(inputs).filter((k) => !known.includes(k))];
    ordered[id] = { inputs: Object.fromEntries(names.map((k) => [k, inputs[k]])), class_type, ...rest };
  }
  // A JSON string cannot hold a raw line break, so only real links (a node id and an output) are folded.
  return JSON.stringify(ordered, null, 2).replace(/\[\n\s+("[0-9A-Za-z_:.-]{1,32}"),\n\s+(\d+)\n\s+\]/g, '[$1, $2]');
}

/** A name for the file: what the workflow is called, without characters a file name may not hold. */
export function jsonFileName(name: string): string {
  const safe = [...name]
    .map((c) => (c.charCodeAt(0) < 32 || '\\/:*?"<>|'.includes(c) ? '_' : c))
    .join('')
    .trim();
  return `${safe || 'workflow'}.json`;
}

/** The workflow's name from the file it came in (my-flow.json → my-flow), within the 60 characters a name may have. */
export const nameFromFile = (fileName: string) =>
  fileName
    .replace(/\.json$/i, '')
    .trim()
    .slice(0, 60);

/** Saves the graph as `<name>.json` (API format, pretty printed). */
export function downloadGraph(name: string, graph: ComfyGraph): void {
  const blob = new Blob([`${prettyGraph(graph)}\n`], { type: 'application/json' });
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = jsonFileName(name);
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // Give the browser a moment to start the download before the URL goes away.
  setTimeout(() => URL.revokeObjectURL(href), 1000);
}
