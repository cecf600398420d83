/** The safetensors writer and reader: a file round-trips, half precision rounds as torch does, and a damaged file is refused. */
import { describe, expect, it } from 'vitest';
import { encodeSafetensors, parseSafetensors, valuesOf } from './safetensors.js';

describe('safetensors', () => {
  it('writes the header length, an aligned JSON header with metadata, and the tensors back to back', () => {
    const file = encodeSafetensors(
      {
        'lora_unet_down.lora_up.weight': { dtype: 'F16', shape: [2, 2], data: new Float32Array([0.5, -2, 65504, 1 / 3]) },
        'lora_unet_down.alpha': { dtype: 'F32', shape: [], data: new Float32Array([8]) },
      },
      { ss_network_dim: '4', ss_epoch: '1' },
    );
    const n = Number(file.readBigUInt64LE(0));
    expect((8 + n) % 8).toBe(0);
    const header = JSON.parse(file.subarray(8, 8 + n).toString()) as Record<string, { data_offsets?: number[] }>;
    expect(header.__metadata__).toEqual({ ss_network_dim: '4', ss_epoch: '1' });
    // Sorted by name: alpha (4 bytes of F32) first, then the 2×2 F16 tensor (8 bytes).
    expect(header['lora_unet_down.alpha']!.data_offsets).toEqual([0, 4]);
    expect(header['lora_unet_down.lora_up.weight']!.data_offsets).toEqual([4, 12]);
    expect(file.length).toBe(8 + n + 12);

    const parsed = parseSafetensors(file);
    expect(parsed.metadata).toEqual({ ss_network_dim: '4', ss_epoch: '1' });
    expect([...valuesOf(parsed.tensors['lora_unet_down.alpha']!)]).toEqual([8]);
    const up = valuesOf(parsed.tensors['lora_unet_down.lora_up.weight']!);
    expect([...up.slice(0, 3)]).toEqual([0.5, -2, 65504]);
    expect(up[3]).toBeCloseTo(0.33325195, 7); // 1/3 in half precision
  });

  it('rounds to half precision like torch: ties to even, tiny values to subnormals, huge ones to infinity', () => {
    const values = new Float32Array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -20, 1e6, -0]);
    const out = valuesOf(parseSafetensors(encodeSafetensors({ t: { dtype: 'F16', shape: [5], data: values } })).tensors.t!);
    expect([...out]).toEqual([1, 1 + 2 ** -9, 2 ** -20, Infinity, -0]);
  });

  it('refuses a file whose header or data is not what it says', () => {
    const good = encodeSafetensors({ a: { dtype: 'F32', shape: [3], data: new Float32Array([1, 2, 3]) } });
    expect(() => parseSafetensors(good.subarray(0, good.length - 1))).toThrow('越界');
    expect(() => parseSafetensors(Buffer.concat([good, Buffer.alloc(4)]))).toThrow('多余字节');
    const huge = Buffer.from(good);
    huge.writeBigUInt64LE(BigInt(good.length));
    expect(() => parseSafetensors(huge)).toThrow('头部长度');
    expect(() => encodeSafetensors({ a: { dtype: 'F32', shape: [2, 2], data: new Float32Array(3) } })).toThrow('形状');
  });
});
