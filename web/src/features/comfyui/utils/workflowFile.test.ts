import { describe, expect, it } from 'vitest';
import { defaultComfyGraph } from '@console/contract';
import { jsonFileName, nameFromFile, parseGraphJson, prettyGraph } from './workflowFile';

describe('workflow JSON', () => {
  it('writes the API format as ComfyUI does, nodes by id and links on one line, and reads it back unchanged', () => {
    const graph = defaultComfyGraph();
    const text = prettyGraph(graph);
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['3', '4', '5', '6', '7', '8', '9']);
    expect(text).toContain('"model": ["4", 0],');
    expect(text).toContain('"class_type": "KSampler"');
    expect(parseGraphJson(text)).toEqual({ ok: true, graph });
  });

  it('tells ComfyUI’s UI format, bad JSON and a graph of the wrong shape apart', () => {
    const ui = parseGraphJson(JSON.stringify({ last_node_id: 3, nodes: [], links: [], version: 0.4 }));
    expect(ui).toMatchObject({ ok: false, title: expect.stringContaining('Save (API Format)') });
    expect(parseGraphJson('{ "3": ')).toMatchObject({ ok: false, title: '不是有效的 JSON' });
    expect(parseGraphJson('{ "3": { "inputs": {} } }')).toMatchObject({
      ok: false,
      title: '不是 ComfyUI API 格式的工作流',
      detail: '每个节点都要有 class_type（位置：3.class_type）',
    });
  });

  it('names the file after the workflow, and a workflow after its file', () => {
    expect(jsonFileName('人像/夜景: v2?')).toBe('人像_夜景_ v2_.json');
    expect(jsonFileName('  ')).toBe('workflow.json');
    expect(nameFromFile('My Flow.JSON')).toBe('My Flow');
  });
});
