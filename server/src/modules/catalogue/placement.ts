/** Where a GPU order lands: the host chosen from a catalogue snapshot for a quote (and so for the order it becomes). */
import type { GpuQuoteRequest } from '@console/contract';
import { AppError } from '../../http/errors.js';
import { liveHosts, regionOfHost } from './inventory.js';
import type { GpuTypeRow, HostRow, ImageRow, Snapshot } from './store.js';
import { compareVersion } from './versions.js';

/**
 * The host a GPU order would land on: the asked one, or the tightest fit in the asked room/region
 * (fewest free cards that still fit), which keeps whole hosts free for 8-card orders.
 */
export function placeGpu(snap: Snapshot, req: GpuQuoteRequest, type: GpuTypeRow, image: ImageRow | undefined): HostRow {
  return req.hostId ? askedHost(snap, req, req.hostId, type, image) : tightestFit(snap, req, type, image);
}

function askedHost(snap: Snapshot, req: GpuQuoteRequest, hostId: string, type: GpuTypeRow, image: ImageRow | undefined): HostRow {
  const host = liveHosts(snap).find((h) => h.id === hostId);
  if (!host) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${hostId} 不存在或已下架`);
  if (host.gpuTypeId !== type.id) throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${host.name} 不是 ${type.name}`);
  if ((req.roomId && host.roomId !== req.roomId) || (req.regionId && regionOfHost(snap, host) !== req.regionId)) {
    throw new AppError('CATALOGUE_ITEM_NOT_FOUND', `主机 ${host.name} 不在所选地区或机房`);
  }
  if (image?.cuda && compareVersion(image.cuda, host.maxCuda) > 0) {
    throw new AppError('IMAGE_INCOMPATIBLE', `${image.name} 需要 CUDA ${image.cuda}，该主机驱动最高支持 ${host.maxCuda}`);
  }
  if (req.dataDiskGb > host.dataDiskMaxGb) throw new AppError('VALIDATION_FAILED', `dataDiskGb：该主机数据盘最大 ${host.dataDiskMaxGb} GB`);
  if (host.gpuFree < req.gpuCount) throw new AppError('NO_CAPACITY', `主机 ${host.name} 当前空闲 ${host.gpuFree} 卡，不足 ${req.gpuCount} 卡`);
  return host;
}

function tightestFit(snap: Snapshot, req: GpuQuoteRequest, type: GpuTypeRow, image: ImageRow | undefined): HostRow {
  const inScope = liveHosts(snap).filter(
    (h) =>
      h.gpuTypeId === type.id &&
      (!req.roomId || h.roomId === req.roomId) &&
      (!req.regionId || regionOfHost(snap, h) === req.regionId) &&
      (!image?.cuda || compareVersion(image.cuda, h.maxCuda) <= 0),
  );
  const fits = inScope.filter((h) => h.gpuFree >= req.gpuCount && h.dataDiskMaxGb >= req.dataDiskGb);
  if (fits.length === 0) {
    const most = Math.max(0, ...inScope.map((h) => h.gpuFree));
    throw new AppError('NO_CAPACITY', `${type.name} 在所选范围内单台主机最多空闲 ${most} 卡${req.dataDiskGb ? '，或数据盘超出主机上限' : ''}`);
  }
  return fits.sort((a, b) => a.gpuFree - b.gpuFree || a.sort - b.sort)[0]!;
}
