import { describe, expect, it } from 'vitest';
import {
  COMFY_MAX_IMAGES,
  EMPTY_COMFY_RUN_STATE,
  analyzeComfyGraph,
  comfyImageUnits,
  defaultComfyGraph,
  finishedComfyRun,
  foldComfyMessage,
  txt2imgGraph,
  type ComfyGraph,
} from '../index.js';
import { diffusionImageSeconds } from './diffusion.js';

const params = {
  prompt: 'a fox',
  negativePrompt: 'blurry',
  baseModel: 'sdxl' as const,
  width: 1024,
  height: 768,
  steps: 30,
  cfg: 6,
  sampler: 'DPM++ 2M Karras' as const,
  seed: 7,
  batchCount: 3,
};

function plan(graph: ComfyGraph) {
  const a = analyzeComfyGraph(graph);
  if (!a.ok) throw new Error(a.errors.map((e) => e.message).join('; '));
  return a.plan;
}
function errors(graph: ComfyGraph) {
  const a = analyzeComfyGraph(graph);
  return a.ok ? [] : a.errors.map((e) => e.message);
}

describe('analyzeComfyGraph', () => {
  it('reads a txt2img graph back into the parameters it was made from, LoRAs included', () => {
    const p = plan(txt2imgGraph(params, [{ file: 'cyberpunk.safetensors', weight: 0.7 }]));
    expect(p.images).toHaveLength(3);
    expect(p.images[2]).toMatchObject({
      node: '9',
      batchIndex: 2,
      baseModel: 'sdxl',
      prompt: 'a fox',
      negativePrompt: 'blurry',
      seed: 9,
      width: 1024,
      height: 768,
      steps: 30,
      sampler: 'DPM++ 2M Karras',
    });
    expect(p.images[0]!.loras).toEqual([{ file: 'cyberpunk.safetensors', weight: 0.7 }]);
    expect(p.seconds).toBeCloseTo(diffusionImageSeconds(params) * 3);
    expect(p.order.indexOf('10')).toBeLessThan(p.order.indexOf('3'));
  });

  it('prices an image as its share of the run, at least ¥0.01', () => {
    const p = plan(txt2imgGraph(params));
    const rate = 1_000_000n; // ¥100 an hour, so the share is above the minimum
    expect(comfyImageUnits(p, rate)).toBe((BigInt(Math.ceil((p.seconds * 1000) / 3)) * rate + 3_599_999n) / 3_600_000n);
    expect(comfyImageUnits(plan(defaultComfyGraph()), 1n)).toBe(100n);
  });

  it('names the node and the input that is wrong', () => {
    const g = defaultComfyGraph();
    delete g['3']!.inputs.steps;
    g['5']!.inputs.width = 500;
    g['6']!.inputs.clip = ['4', 0];
    g['4']!.inputs.ckpt_name = 'nope.ckpt';
    const e = errors(g);
    expect(e).toContain('节点 3（KSampler）的 steps 未填写');
    expect(e).toContain('节点 5（Empty Latent Image）的 width 应为 8 的倍数');
    expect(e).toContain('节点 6（CLIP Text Encode (Prompt)）的 clip 应连接 CLIP，而节点 4 的第 0 个输出是 MODEL');
    expect(e.some((m) => m.startsWith('节点 4（Load Checkpoint）的 ckpt_name 应为其中之一'))).toBe(true);
  });

  it('refuses unknown nodes, cycles, no output and too many images', () => {
    expect(errors({ ...defaultComfyGraph(), x: { class_type: 'ControlNetApply', inputs: {} } })[0]).toContain('ControlNetApply');
    const loop = defaultComfyGraph();
    loop['5'] = { class_type: 'KSampler', inputs: { ...loop['3']!.inputs, latent_image: ['3', 0] } };
    expect(errors(loop)[0]).toContain('环');
    const noOutput = defaultComfyGraph();
    delete noOutput['9'];
    expect(errors(noOutput)[0]).toContain('没有输出节点');
    const many = txt2imgGraph({ ...params, batchCount: 8 });
    many['19'] = { class_type: 'SaveImage', inputs: { images: ['8', 0], filename_prefix: 'b' } };
    many['29'] = { class_type: 'SaveImage', inputs: { images: ['8', 0], filename_prefix: 'c' } };
    expect(errors(many)[0]).toContain(`最多输出 ${COMFY_MAX_IMAGES} 张`);
  });

  it('takes an own LoRA only where the backend has it', () => {
    const g = txt2imgGraph(params, [{ file: 'console-job-000003.safetensors', weight: 1 }]);
    expect(errors(g)[0]).toContain('lora_name 应为其中之一');
    const a = analyzeComfyGraph(g, { ownLoras: ['console-job-000003.safetensors'] });
    expect(a.ok && a.plan.images[0]!.loras).toEqual([{ file: 'console-job-000003.safetensors', weight: 1 }]);
  });

  it('runs only what leads to an output', () => {
    const g = defaultComfyGraph();
    g['50'] = { class_type: 'CLIPTextEncode', inputs: { text: 'unused', clip: ['4', 1] } };
    expect(plan(g).order).not.toContain('50');
  });
});

describe('foldComfyMessage', () => {
  it('tracks the running node, its progress, what finished and the error', () => {
    const id = 'p';
    let s = foldComfyMessage(EMPTY_COMFY_RUN_STATE, { type: 'execution_start', data: { prompt_id: id } });
    s = foldComfyMessage(s, { type: 'executing', data: { prompt_id: id, node: '4' } });
    s = foldComfyMessage(s, { type: 'executing', data: { prompt_id: id, node: '3' } });
    s = foldComfyMessage(s, { type: 'progress', data: { prompt_id: id, node: '3', value: 5, max: 20 } });
    expect(s).toEqual({ executing: '3', progress: { node: '3', value: 5, max: 20 }, executed: ['4'], error: null });
    s = foldComfyMessage(s, { type: 'execution_error', data: { prompt_id: id, node_id: '3', node_type: 'KSampler', exception_message: 'CUDA out of memory' } });
    expect(s).toMatchObject({ executing: null, progress: null, executed: ['4'], error: { node: '3', nodeType: 'KSampler', message: 'CUDA out of memory' } });
  });

  it('closes a run the backend reported finished before its last "executing: null" arrived', () => {
    let s = foldComfyMessage(EMPTY_COMFY_RUN_STATE, { type: 'executing', data: { prompt_id: 'p', node: '8' } });
    s = foldComfyMessage(s, { type: 'executing', data: { prompt_id: 'p', node: '9' } });
    expect(finishedComfyRun(s)).toEqual({ executing: null, progress: null, executed: ['8', '9'], error: null });
    // A run already closed stays as it was.
    expect(finishedComfyRun(finishedComfyRun(s))).toEqual(finishedComfyRun(s));
  });
});
