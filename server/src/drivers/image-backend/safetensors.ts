/**
 * The safetensors format (huggingface/safetensors), which LoRA files are shared in: an 8-byte
 * little-endian header length N, N bytes of JSON — each tensor's dtype, shape and byte range in the
 * data that follows, and an optional `__metadata__` of strings (kohya sd-scripts writes `ss_*` keys
 * there) — then the tensors' bytes, back to back. Written and read here without a dependency.
 */

export type Dtype = 'F32' | 'F16';
const BYTES: Record<Dtype, number> = { F32: 4, F16: 2 };

export interface Tensor {
  dtype: Dtype;
  shape: number[];
  /** The values, row-major; stored as `dtype`. */
  data: Float32Array;
}

/** The largest header a reader takes (the format's own limit is 100 MB). */
const MAX_HEADER = 100 * 1024 * 1024;

export function encodeSafetensors(tensors: Record<string, Tensor>, metadata: Record<string, string> = {}): Buffer {
  const header: Record<string, unknown> = Object.keys(metadata).length ? { __metadata__: metadata } : {};
  const parts: Buffer[] = [];
  let offset = 0;
  // Sorted by name, as the reference implementation writes them: the same tensors give the same file.
  for (const name of Object.keys(tensors).sort()) {
    const t = tensors[name]!;
    const count = t.shape.reduce((n, d) => n * d, 1);
    if (count !== t.data.length) throw new Error(`张量 ${name} 的形状与数据长度不符`);
    const bytes = t.dtype === 'F32' ? Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength) : toF16(t.data);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  // Padded with spaces to a multiple of 8, so the data starts aligned.
  json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([length, Buffer.from(json), ...parts]);
}

export interface ParsedSafetensors {
  metadata: Record<string, string>;
  tensors: Record<string, { dtype: string; shape: number[]; data: Buffer }>;
}

/** Reads a safetensors file, checking what a careful loader checks; throws on anything malformed. */
export function parseSafetensors(file: Buffer): ParsedSafetensors {
  if (file.length < 8) throw new Error('文件过短');
  const n = Number(file.readBigUInt64LE(0));
  if (n > MAX_HEADER || 8 + n > file.length) throw new Error('头部长度超出文件');
  const header = JSON.parse(file.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>;
  const data = file.subarray(8 + n);
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  const tensors: ParsedSafetensors['tensors'] = {};
  const ranges: [number, number][] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = value as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const [begin, end] = t.data_offsets;
    const size = BYTES[t.dtype as Dtype];
    if (!size) throw new Error(`张量 ${name} 的类型 ${t.dtype} 不支持`);
    if (!(begin >= 0 && end >= begin && end <= data.length)) throw new Error(`张量 ${name} 的数据范围越界`);
    if (end - begin !== t.shape.reduce((a, d) => a * d, 1) * size) throw new Error(`张量 ${name} 的大小与形状不符`);
    ranges.push([begin, end]);
    tensors[name] = { dtype: t.dtype, shape: t.shape, data: data.subarray(begin, end) };
  }
  // The data is the tensors back to back: no gaps, no overlaps, nothing after them.
  ranges.sort((a, b) => a[0] - b[0]);
  let at = 0;
  for (const [begin, end] of ranges) {
    if (begin !== at) throw new Error('张量数据之间有空隙或重叠');
    at = end;
  }
  if (at !== data.length) throw new Error('张量数据之后还有多余字节');
  return { metadata, tensors };
}

/** The values of a parsed tensor as numbers. */
export function valuesOf(t: { dtype: string; data: Buffer }): Float32Array {
  if (t.dtype === 'F32') return new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength));
  const out = new Float32Array(t.data.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = fromF16(t.data.readUInt16LE(i * 2));
  return out;
}

function toF16(values: Float32Array): Buffer {
  const out = Buffer.alloc(values.length * 2);
  for (let i = 0; i < values.length; i++) out.writeUInt16LE(f16Bits(values[i]!), i * 2);
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 half precision, rounded to nearest even (what torch's .half() gives). */
function f16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // infinity, NaN
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // too large: infinity
  if (e <= 0) {
    if (e < -10) return sign; // too small: zero
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rounded = (mant + half - 1 + ((mant >>> shift) & 1)) >>> shift;
    return sign | rounded;
  }
  const rounded = mant + 0xfff + ((mant >>> 13) & 1);
  if (rounded & 0x800000) {
    mant = 0;
    e += 1;
    if (e >= 0x1f) return sign | 0x7c00;
  } else mant = rounded;
  return sign | (e << 10) | (mant >>> 13);
}

function fromF16(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
