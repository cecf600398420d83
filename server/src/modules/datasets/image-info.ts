/**
 * What an uploaded file really is, read from its first bytes (the name's extension is the user's
 * word only): PNG, JPEG, WebP or BMP, and the picture's size. Anything else is not an image here.
 * An image is then decoded whole (sharp; BMP by hand, as libvips has no BMP loader) to make its
 * thumbnail: a file whose header looks right but whose pixels do not decode is refused too.
 */
import sharp from 'sharp';
import type { DatasetImage } from '@console/contract';

export interface ImageInfo {
  format: DatasetImage['format'];
  width: number;
  height: number;
}

/** The largest side taken (a bigger "image" is most likely a damaged or hostile header). */
const MAX_SIDE = 16384;

export function imageInfo(bytes: Buffer): ImageInfo | null {
  const info = png(bytes) ?? jpeg(bytes) ?? webp(bytes) ?? bmp(bytes);
  if (!info || info.width < 1 || info.height < 1 || info.width > MAX_SIDE || info.height > MAX_SIDE) return null;
  return info;
}

/** The file extension a format is exported under. */
export const EXTENSION_OF: Record<ImageInfo['format'], string> = { png: '.png', jpeg: '.jpg', webp: '.webp', bmp: '.bmp' };
export const CONTENT_TYPE_OF: Record<ImageInfo['format'], string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', bmp: 'image/bmp' };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function png(b: Buffer): ImageInfo | null {
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE) || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { format: 'png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** Start-of-frame markers (baseline, progressive, lossless…; not DHT C4, JPG C8, DAC CC). */
const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

function jpeg(b: Buffer): ImageInfo | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8 || b[2] !== 0xff) return null;
  let at = 2;
  while (at + 4 <= b.length) {
    if (b[at] !== 0xff) return null;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end of image or scan data before any frame header
    const length = b.readUInt16BE(at + 2);
    if (length < 2) return null;
    if (SOF.has(marker)) {
      if (at + 9 > b.length) return null;
      return { format: 'jpeg', height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
    }
    at += 2 + length;
  }
  return null;
}

function webp(b: Buffer): ImageInfo | null {
  if (b.length < 30 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') return null;
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ') {
    // A key frame: the start code, then 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
    return { format: 'webp', width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (b[20] !== 0x2f) return null;
    const bits = b.readUInt32LE(21);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') return { format: 'webp', width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  return null;
}

function bmp(b: Buffer): ImageInfo | null {
  if (b.length < 26 || b.toString('latin1', 0, 2) !== 'BM') return null;
  const header = b.readUInt32LE(14);
  if (header === 12) return { format: 'bmp', width: b.readUInt16LE(18), height: b.readUInt16LE(20) };
  if (header < 40 || b.length < 26) return null;
  return { format: 'bmp', width: Math.abs(b.readInt32LE(18)), height: Math.abs(b.readInt32LE(22)) };
}

/** The thumbnails' longest side, in pixels (the dataset page shows them 160 px high, sharp on 2× screens). */
export const THUMBNAIL_SIDE = 320;

/**
 * The image checked and its thumbnail (WebP), or null when the file is not an image it claims to
 * be: an unknown header, pixels that do not decode, a BMP kind other than uncompressed 24/32 bits.
 */
export async function inspectImage(bytes: Buffer): Promise<{ info: ImageInfo; thumbnail: Buffer } | null> {
  const info = imageInfo(bytes);
  if (!info || info.width * info.height > MAX_PIXELS) return null;
  return decoding.run(() => thumbnailOf(bytes, info));
}

/**
 * The most pixels a picture may have: a decoded 40-megapixel image takes some 120 MB (a progressive
 * JPEG several times that), so a small file cannot make the server decode a huge one.
 */
const MAX_PIXELS = 40_000_000;

/** Decodes at once, across the process: two, however many uploads arrive together. */
const decoding = (() => {
  let running = 0;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (running >= 2) await new Promise<void>((resolve) => waiting.push(resolve));
      running++;
      try {
        return await task();
      } finally {
        running--;
        waiting.shift()?.();
      }
    },
  };
})();

async function thumbnailOf(bytes: Buffer, info: ImageInfo): Promise<{ info: ImageInfo; thumbnail: Buffer } | null> {
  try {
    const source = info.format === 'bmp' ? bmpPixels(bytes) : sharp(bytes, { failOn: 'error', limitInputPixels: MAX_PIXELS });
    if (!source) return null;
    const thumbnail = await source
      .rotate() // a phone's EXIF orientation, as the picture is seen
      .resize({ width: THUMBNAIL_SIDE, height: THUMBNAIL_SIDE, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer();
    return { info, thumbnail };
  } catch {
    return null;
  }
}

/** An uncompressed 24- or 32-bit BMP's pixels for sharp; null for any other kind. */
function bmpPixels(b: Buffer): sharp.Sharp | null {
  const header = b.readUInt32LE(14);
  if (header < 40) return null;
  const width = b.readInt32LE(18);
  const rawHeight = b.readInt32LE(22);
  const bits = b.readUInt16LE(28);
  const compression = b.readUInt32LE(30);
  if ((bits !== 24 && bits !== 32) || (compression !== 0 && !(compression === 3 && bits === 32)) || width <= 0) return null;
  const height = Math.abs(rawHeight);
  const offset = b.readUInt32LE(10);
  const stride = Math.ceil((width * bits) / 32) * 4;
  if (offset + stride * height > b.length) return null;
  const bytesPer = bits / 8;
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    // Rows are stored bottom-up unless the height is negative.
    const row = offset + (rawHeight > 0 ? height - 1 - y : y) * stride;
    for (let x = 0; x < width; x++) {
      const at = row + x * bytesPer;
      const to = (y * width + x) * 3;
      rgb[to] = b[at + 2]!;
      rgb[to + 1] = b[at + 1]!;
      rgb[to + 2] = b[at]!;
    }
  }
  return sharp(rgb, { raw: { width, height, channels: 3 } });
}
