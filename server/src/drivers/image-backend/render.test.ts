/** The embedded painter: the same parameters give the same picture, and each parameter shows in it. */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { renderImage, renderPixels, type RenderParams } from './render.js';

const base: RenderParams = { prompt: '1girl, purple hair, garden', negativePrompt: 'lowres', seed: 42, width: 96, height: 64, steps: 20, cfg: 7, loras: [] };
const mean = (px: Buffer) => [0, 1, 2].map((k) => px.filter((_, i) => i % 3 === k).reduce((s, v) => s + v, 0) / (px.length / 3));
const diff = (a: Buffer, b: Buffer) => a.reduce((s, v, i) => s + Math.abs(v - b[i]!), 0) / a.length;

describe('embedded painter', () => {
  it('paints a PNG of the asked size, the same bytes for the same parameters', async () => {
    const png = await renderImage(base);
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 96, height: 64, channels: 3 });
    expect((await renderImage(base)).equals(png)).toBe(true);
  });

  it('shows every parameter: seed, prompt, steps (noise), CFG (colour), LoRA (tint)', () => {
    const px = renderPixels(base);
    expect(diff(renderPixels({ ...base, seed: 43 }), px)).toBeGreaterThan(2);
    expect(diff(renderPixels({ ...base, prompt: 'castle, night sky' }), px)).toBeGreaterThan(10);
    // Noise: neighbouring pixels differ more after 4 steps than after 50.
    const roughness = (p: Buffer) => p.reduce((s, v, i) => (i >= 3 ? s + Math.abs(v - p[i - 3]!) : s), 0) / p.length;
    expect(roughness(renderPixels({ ...base, steps: 4 }))).toBeGreaterThan(roughness(renderPixels({ ...base, steps: 50 })) * 2);
    // A red LoRA at full weight makes the picture redder than without it.
    const [r0] = mean(px);
    const [r1, g1] = mean(renderPixels({ ...base, loras: [{ color: [1, 0, 0], weight: 1 }] }));
    expect(r1!).toBeGreaterThan(r0! + 10);
    expect(r1!).toBeGreaterThan(g1!);
    expect(diff(renderPixels({ ...base, cfg: 15 }), px)).toBeGreaterThan(1);
  });
});
