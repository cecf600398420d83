/**
 * The market on one real host (issue 30 §3): with a compute driver that reports what its host has
 * (ComputeDriver.offer: the local driver), the catalogue offers only that — GPU types whose cards the
 * host has, images present in its layout (or the host's own system), applications whose image is
 * present, sizes within its cores and memory times the operator's overcommit ratios — and says why
 * of the rest. Without an offer (the simulated fleet) the whole demonstration catalogue is sold.
 */
import type { HostOffer } from '../../drivers/compute/types.js';
import type { Settings } from './store.js';

export type { HostOffer };

/** How long one reading of the host serves the market's lists (quotes read it afresh). */
const OFFER_TTL_MS = 2000;

export const IMAGE_NOT_BUILT = '镜像未构建：在主机上运行 npm run images';
/** An image the operator registered (镜像登记) that this host has not pulled yet. */
export const IMAGE_NOT_PULLED = '镜像正在拉取到本主机（运营管理 · 镜像登记 可看进度），请稍后再试';
export const APP_IMAGE_UNREGISTERED = '运营方尚未登记该应用的镜像';

/** The host's offer with the operator's overcommit ratios: what the market decides by. */
export interface HostMarket {
  offer: HostOffer;
  cpuOvercommit: number;
  memoryOvercommit: number;
}

export function hostMarket(offer: HostOffer, settings: Pick<Settings, 'hostCpuOvercommit' | 'hostMemoryOvercommit'>): HostMarket {
  return { offer, cpuOvercommit: settings.hostCpuOvercommit, memoryOvercommit: settings.hostMemoryOvercommit };
}

/** Reads the driver's offer at most once per OFFER_TTL_MS for the lists; null without one. */
export class HostOfferReader {
  private cached: { at: number; offer: Promise<HostOffer> } | null = null;

  constructor(private read: (() => Promise<HostOffer>) | undefined) {}

  get enabled(): boolean {
    return this.read !== undefined;
  }

  /** A recent reading (the market's lists). */
  async recent(): Promise<HostOffer | null> {
    if (!this.read) return null;
    const now = performance.now();
    if (!this.cached || now - this.cached.at > OFFER_TTL_MS) this.cached = { at: now, offer: this.read() };
    return this.cached.offer;
  }

  /** A reading taken now (quotes: capacity must not be a moment old). */
  async fresh(): Promise<HostOffer | null> {
    return this.read ? this.read() : null;
  }
}

// --- cards -----------------------------------------------------------------

function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/**
 * Whether a host card (nvidia-smi's "NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB") is of the
 * catalogue's type ("RTX 4090", "A100 80GB"): every word of the type's name is a word of the model's,
 * a memory word ("80GB") by the card's real memory where it is known (within 10 %).
 */
export function cardIsOfType(card: { model: string; memoryMb: number }, type: { name: string; memoryGb: number }): boolean {
  const model = new Set(tokens(card.model));
  const words = tokens(type.name);
  const memoryWord = (w: string) => /^\d+gb$/.test(w);
  if (!words.filter((w) => !memoryWord(w)).every((w) => model.has(w))) return false;
  if (card.memoryMb > 0) return Math.abs(card.memoryMb / 1024 - type.memoryGb) <= type.memoryGb * 0.1;
  return words.filter(memoryWord).every((w) => model.has(w));
}

/** How many of the host's cards are of this type. */
export function hostCardsOf(market: HostMarket, type: { name: string; memoryGb: number }): number {
  return market.offer.gpus.filter((g) => cardIsOfType(g, type)).reduce((n, g) => n + g.count, 0);
}

/** Cards of this type no machine holds (held cards of any model counted against it: a host rarely mixes models). */
export function freeCardsOf(market: HostMarket, type: { name: string; memoryGb: number }): number {
  return Math.max(0, hostCardsOf(market, type) - market.offer.held.gpus);
}

/** Why a GPU type is not offered on this host; null when it is. */
export function gpuTypeRefusal(market: HostMarket, type: { name: string; memoryGb: number }): string | null {
  return hostCardsOf(market, type) > 0 ? null : `本主机没有 ${type.name}`;
}

// --- images ----------------------------------------------------------------

/** A catalogue image as the market judges it: `oci` names its OCI image (absent: it boots on the host's own system). */
export interface OfferedImage {
  name: string;
  os: string;
  oci?: string | null;
}

/** Whether an image's `os` ("Debian 12", "Ubuntu 22.04") is the host's own system (os-release ID and VERSION_ID). */
export function isHostSystem(os: string, hostOs: HostOffer['hostOs']): boolean {
  const words = os
    .toLowerCase()
    .split(/[^a-z0-9.]+/)
    .filter(Boolean);
  if (!words[0] || words[0] !== hostOs.id.toLowerCase() || !hostOs.versionId) return false;
  const version = words.find((w) => /^\d/.test(w));
  return version === hostOs.versionId || (version?.startsWith(`${hostOs.versionId}.`) ?? false);
}

/** Why an image is not offered on this host; null when it is (its OCI image is present, or it is the host's system). */
export function imageRefusal(market: HostMarket, image: OfferedImage): string | null {
  const { images, hostOs } = market.offer;
  if (image.oci) return images === null || images.includes(image.oci) ? null : isStockImage(image.oci) ? IMAGE_NOT_BUILT : IMAGE_NOT_PULLED;
  if (isHostSystem(image.os, hostOs)) return null;
  return `运营方尚未登记该镜像（本主机的系统是 ${hostOs.name}），请选择其他镜像`;
}

/** The console's own images (server/images recipes) are built on the host; any other reference is pulled from a registry. */
function isStockImage(ref: string): boolean {
  return ref.startsWith('console/');
}

/** An offered image without an OCI image is the host's own system: named for it. */
export function hostSystemNaming(market: HostMarket, image: OfferedImage): { name: string; os: string } | null {
  return image.oci ? null : { name: `${image.name} · 本主机系统`, os: market.offer.hostOs.name };
}

/** Why an application is not offered: its image is not registered (no OCI image) or not present. */
export function applicationRefusal(market: HostMarket, image: OfferedImage | undefined): string | null {
  if (!image?.oci) return APP_IMAGE_UNREGISTERED;
  return imageRefusal(market, image);
}

// --- region ----------------------------------------------------------------

/**
 * Whether the market sells machines sized by the catalogue (CPU sizes) in this region: anywhere on
 * the simulated fleet; on a real host only in its one region, the catalogue's first (the machines
 * run on this one host, wherever the demonstration catalogue puts its regions).
 */
export function sellsSizesIn(market: HostMarket | null, regions: readonly { id: string }[], regionId: string): boolean {
  return !market || regions[0]?.id === regionId;
}

// --- cores and memory ------------------------------------------------------

/** What the host may sell in all: its cores and memory times the operator's ratios. */
export function saleLimits(market: HostMarket): { cpu: number; memoryGb: number } {
  return { cpu: Math.floor(market.offer.cpus * market.cpuOvercommit), memoryGb: Math.floor(market.offer.memoryGb * market.memoryOvercommit) };
}

/** Why a machine of this size never fits this host (bigger than all it may sell); null when it may. */
export function sizeRefusal(market: HostMarket, size: { cpu: number; memoryGb: number }): string | null {
  const limit = saleLimits(market);
  if (size.cpu <= limit.cpu && size.memoryGb <= limit.memoryGb) return null;
  return `本主机只有 ${market.offer.cpus} 核 / ${market.offer.memoryGb} GB 内存，放不下 ${size.cpu} 核 / ${size.memoryGb} GB 的机器`;
}

/** Why `cpu` cores and `memoryGb` more do not fit beside what the machines hold now; null when they do. */
export function capacityRefusal(market: HostMarket, want: { cpu: number; memoryGb: number }): string | null {
  const limit = saleLimits(market);
  const free = { cpu: Math.max(0, limit.cpu - market.offer.held.cpu), memoryGb: Math.max(0, limit.memoryGb - market.offer.held.memoryGb) };
  if (want.cpu <= free.cpu && want.memoryGb <= free.memoryGb) return null;
  return `本主机剩余 ${free.cpu} 核 / ${free.memoryGb} GB 内存可售，所选配置需要 ${want.cpu} 核 / ${want.memoryGb} GB，请稍后再试或选择更小的配置`;
}

/** The start-up log's line: which market applies. */
export function describeMarket(market: HostMarket | null, sellableImages: string[]): string {
  if (!market) return '市场：模拟机群：演示目录';
  const { offer } = market;
  const cards = offer.gpus.length ? offer.gpus.map((g) => `${g.model} × ${g.count}`).join('、') : '无 GPU';
  const ratios = market.cpuOvercommit !== 1 || market.memoryOvercommit !== 1 ? `（超售比例 CPU ${market.cpuOvercommit}、内存 ${market.memoryOvercommit}）` : '';
  return (
    `市场按本主机实际配置：${offer.cpus} 核 / ${offer.memoryGb} GB / ${cards}${ratios}，系统 ${offer.hostOs.name}；` +
    `可售镜像：${sellableImages.length ? sellableImages.join('、') : '无'}` +
    (offer.images?.length ? '' : '（其他镜像未构建：在主机上运行 npm run images）')
  );
}

/** What the site settings tell every page of the host (SiteSettings.host). */
export function hostSummary(market: HostMarket) {
  const { offer } = market;
  const limit = saleLimits(market);
  return {
    cpus: offer.cpus,
    memoryGb: offer.memoryGb,
    diskGb: offer.diskGb,
    gpus: offer.gpus.map((g) => ({ model: g.model, count: g.count })),
    os: offer.hostOs.name,
    cpuForSale: limit.cpu,
    memoryGbForSale: limit.memoryGb,
    cpuFree: Math.max(0, Math.floor(limit.cpu - offer.held.cpu)),
    memoryGbFree: Math.max(0, Math.floor(limit.memoryGb - offer.held.memoryGb)),
  };
}
