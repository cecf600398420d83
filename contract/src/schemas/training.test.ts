import { describe, expect, it } from 'vitest';
import { DATASET_KIND_LABELS, type DatasetKind } from './dataset.js';
import { LORA_MIN_CHARGE_UNITS, LORA_PARAM_HINTS, SD_BASE_MODELS, loraEpochCharge, loraEstimate, loraParamsSchema, loraPreset, loraSteps } from './training.js';

describe('LoRA training parameters', () => {
  it('gives every dataset type and base model a preset the schema takes, and every parameter a hint', () => {
    for (const kind of Object.keys(DATASET_KIND_LABELS) as DatasetKind[]) {
      for (const model of SD_BASE_MODELS) {
        const preset = loraPreset(kind, model.id);
        expect(loraParamsSchema.safeParse(preset).success, `${kind}/${model.id}`).toBe(true);
        expect(preset.resolution).toBe(model.resolution);
      }
    }
    expect(Object.keys(LORA_PARAM_HINTS).sort()).toEqual(Object.keys(loraPreset('person', 'sd15')).sort());
  });

  it('refuses values out of range with the field and a Chinese message', () => {
    const preset = loraPreset('person', 'sd15');
    const issue = (patch: object) => loraParamsSchema.safeParse({ ...preset, ...patch }).error?.issues[0];
    expect(issue({ resolution: 500 })).toMatchObject({ path: ['resolution'], message: '分辨率应为 64 的倍数' });
    expect(issue({ epochs: 0 })).toMatchObject({ path: ['epochs'], message: '训练轮数最小为 1' });
    expect(issue({ unetLr: 0.5 })).toMatchObject({ path: ['unetLr'], message: 'UNet 学习率最大为 0.01' });
    expect(issue({ optimizer: 'SGD' })).toMatchObject({ path: ['optimizer'], message: '请选择优化器' });
    expect(issue({ networkDim: 8, networkAlpha: 16 })).toMatchObject({ path: ['networkAlpha'], message: '网络 Alpha 不能大于网络维度' });
    expect(issue({ batchSize: 1.5 })).toMatchObject({ path: ['batchSize'], message: '批大小应为整数' });
  });

  it('counts steps as sd-scripts does: ⌈images × repeats ÷ batch⌉ per epoch', () => {
    expect(loraSteps(25, { repeats: 10, epochs: 10, batchSize: 2 })).toEqual({ perEpoch: 125, total: 1250 });
    expect(loraSteps(7, { repeats: 3, epochs: 2, batchSize: 4 })).toEqual({ perEpoch: 6, total: 12 });
  });
});

describe('LoRA training estimate', () => {
  const rate = 19800n; // ¥1.98 an hour

  it('prices the GPU time of the steps at the hourly rate, rounded up, never below the minimum', () => {
    const p = loraPreset('person', 'sd15'); // 10 repeats, 10 epochs, batch 2, 512 px
    const e = loraEstimate(25, p, 'sd15', rate);
    expect(e.steps).toEqual({ perEpoch: 125, total: 1250 });
    // 60 s + 1250 × 0.45 × 2^0.9 + 10 × 5 s
    expect(e.seconds).toBe(Math.ceil(60 + 1250 * 0.45 * 2 ** 0.9 + 50));
    expect(e.units).toBe((BigInt(e.seconds) * rate + 3599n) / 3600n);
    expect(loraEstimate(1, { ...p, repeats: 1, epochs: 1 }, 'sd15', rate).units).toBe(LORA_MIN_CHARGE_UNITS);
    // SDXL at its 1024 px costs more than SD 1.5 at 512 for the same steps.
    expect(loraEstimate(25, { ...p, resolution: 1024 }, 'sdxl', rate).units).toBeGreaterThan(e.units);
  });

  it('splits the estimate over the epochs so that the epochs together owe exactly the estimate', () => {
    const estimate = 10001n;
    const shares = Array.from({ length: 3 }, (_, i) => loraEpochCharge(estimate, 3, i + 1));
    expect(shares).toEqual([3333n, 3333n, 3335n]);
    expect(shares.reduce((a, b) => a + b, 0n)).toBe(estimate);
  });
});
