/**
 * The embedded image backend's painter: a picture computed from the generation parameters alone,
 * so the same parameters always give the same bytes (as a fixed seed does in Stable Diffusion) and
 * every parameter shows: the prompt's words choose the palette, the negative prompt's push colours
 * away, the seed places the shapes, more steps leave less noise, a higher CFG scale gives stronger
 * colour, and each LoRA tints the picture toward its own colour by its weight.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';

export interface RenderParams {
  prompt: string;
  negativePrompt: string;
  seed: number;
  width: number;
  height: number;
  steps: number;
  cfg: number;
  /** The sampler's name: another sampler takes another path to another picture. */
  sampler?: string;
  /** Each LoRA's colour (RGB, 0–1; the embedded trainer derives it from its dataset) and weight. */
  loras: { color: [number, number, number]; weight: number }[];
}

type Rgb = [number, number, number];

/** Rows painted between two yields to the event loop: a large picture never blocks the server for long. */
const ROWS_PER_SLICE = 32;

/** The picture as a PNG, painted a slice of rows at a time. */
export async function renderImage(p: RenderParams): Promise<Buffer> {
  const painter = rowPainter(p);
  for (let y = 0; y < p.height; y += ROWS_PER_SLICE) {
    painter.paint(y, Math.min(p.height, y + ROWS_PER_SLICE));
    await new Promise((resolve) => setImmediate(resolve));
  }
  return sharp(painter.out, { raw: { width: p.width, height: p.height, channels: 3 } })
    .png({ compressionLevel: 6 })
    .toBuffer();
}

/** The picture's RGB bytes, row by row. */
export function renderPixels(p: RenderParams): Buffer {
  const painter = rowPainter(p);
  painter.paint(0, p.height);
  return painter.out;
}

/** Paints rows in order (the noise is drawn pixel by pixel from one seeded sequence, so the order matters). */
function rowPainter(p: RenderParams): { out: Buffer; paint: (from: number, to: number) => void } {
  const random = mulberry32(seedOf(p));
  const palette = paletteOf(p);
  const tint = tintOf(p.loras);
  const shapes = Array.from({ length: 3 + Math.floor(p.steps / 6) }, (_, i) => ({
    x: random() * p.width,
    y: random() * p.height,
    r: (0.08 + random() * 0.3) * Math.min(p.width, p.height),
    color: palette[(i + 1) % palette.length]!,
    alpha: 0.35 + random() * 0.5,
  }));
  // More steps, less noise left: as a sampler's later steps remove it.
  const noise = 40 / Math.sqrt(Math.max(1, p.steps));
  const strength = Math.min(2, 0.6 + p.cfg / 10);
  const out = Buffer.alloc(p.width * p.height * 3);
  const top = palette[0]!;
  const bottom = palette[palette.length - 1]!;
  const paint = (from: number, to: number) => {
    for (let y = from; y < to; y++) {
      const t = y / Math.max(1, p.height - 1);
      for (let x = 0; x < p.width; x++) {
        let c: Rgb = [top[0] + (bottom[0] - top[0]) * t, top[1] + (bottom[1] - top[1]) * t, top[2] + (bottom[2] - top[2]) * t];
        for (const s of shapes) {
          const d = Math.hypot(x - s.x, y - s.y) / s.r;
          if (d >= 1) continue;
          const a = s.alpha * (1 - d * d); // soft edge
          c = [c[0] + (s.color[0] - c[0]) * a, c[1] + (s.color[1] - c[1]) * a, c[2] + (s.color[2] - c[2]) * a];
        }
        if (tint) c = [c[0] + (tint.color[0] - c[0]) * tint.amount, c[1] + (tint.color[1] - c[1]) * tint.amount, c[2] + (tint.color[2] - c[2]) * tint.amount];
        const grey = (c[0] + c[1] + c[2]) / 3;
        const n = (random() - 0.5) * noise;
        const at = (y * p.width + x) * 3;
        for (let k = 0; k < 3; k++) out[at + k] = clamp(grey + (c[k]! - grey) * strength + n);
      }
    }
  };
  return { out, paint };
}

/** The words of a prompt (comma or space separated, weights like (word:1.2) reduced to the word). */
function wordsOf(prompt: string): string[] {
  return prompt
    .toLowerCase()
    .replace(/[():\d.]+/g, ' ')
    .split(/[\s,，]+/)
    .filter(Boolean);
}

/** Up to four colours from the prompt's words; the negative prompt's words turn hues away from theirs. */
function paletteOf(p: RenderParams): Rgb[] {
  const words = wordsOf(p.prompt);
  const avoid = wordsOf(p.negativePrompt).map((w) => hueOf(w));
  const hues = (words.length ? words : ['empty']).slice(0, 4).map((w) => {
    let h = hueOf(w);
    for (const a of avoid) if (Math.abs(h - a) < 0.08) h = (h + 0.5) % 1;
    return h;
  });
  if (hues.length === 1) hues.push((hues[0]! + 0.12) % 1);
  return hues.map((h, i) => hsl(h, 0.55 + 0.1 * (i % 2), 0.35 + 0.12 * i));
}

function tintOf(loras: RenderParams['loras']): { color: Rgb; amount: number } | null {
  const total = loras.reduce((s, l) => s + Math.max(0, l.weight), 0);
  if (!total) return null;
  const color = [0, 1, 2].map((k) => (loras.reduce((s, l) => s + l.color[k]! * Math.max(0, l.weight), 0) / total) * 255) as Rgb;
  return { color, amount: Math.min(0.6, total * 0.3) };
}

function hueOf(word: string): number {
  return createHash('sha256').update(word).digest().readUInt32BE(0) / 2 ** 32;
}

function seedOf(p: RenderParams): number {
  const h = createHash('sha256')
    .update(JSON.stringify([p.seed, p.prompt, p.negativePrompt, p.width, p.height, p.steps, p.cfg, ...(p.sampler ? [p.sampler] : [])]))
    .digest();
  return h.readUInt32BE(0);
}

function hsl(h: number, s: number, l: number): Rgb {
  const k = (n: number) => (n + h * 12) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [f(0) * 255, f(8) * 255, f(4) * 255];
}

/** A small, fast, seedable random number generator (the same seed, the same sequence). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function clamp(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : Math.round(v);
}
