import { Alert } from 'antd';
import { useQuery } from '@tanstack/react-query';
import type { SiteSettings } from '@console/contract';
import { siteQueries } from '../../../api/site';

type Host = NonNullable<SiteSettings['host']>;

/** "2 核 / 4 GB 内存 / 无 GPU": what the host has, as a buyer compares it. */
export function hostHardware(host: Host): string {
  const cards = host.gpus.length ? host.gpus.map((g) => `${g.model} × ${g.count}`).join('、') : '无 GPU';
  return `${host.cpus} 核 / ${host.memoryGb} GB 内存 / ${cards}`;
}

/** The host the market sells (the local driver), or undefined on the simulated fleet; its free cores change, so read it often. */
export function useMarketHost(): Host | undefined {
  return useQuery({ ...siteQueries.settings(), staleTime: 20_000 }).data?.host ?? undefined;
}

/**
 * On a market that sells one real host: what it has and what is left to sell, so that a buyer knows
 * why a bigger size, a GPU or an image is not offered. Nothing on the simulated fleet.
 */
export function HostNote() {
  const host = useMarketHost();
  if (!host) return null;
  return (
    <Alert
      className="host-note"
      type="info"
      showIcon
      title={`本主机：${hostHardware(host)} · ${host.os}`}
      description={
        `可售 ${host.cpuForSale} 核 / ${host.memoryGbForSale} GB 内存，当前剩余 ${host.cpuFree} 核 / ${host.memoryGbFree} GB；` +
        `磁盘可用 ${host.diskGb} GB。主机没有的显卡和未构建的镜像不在售，镜像可在主机上运行 npm run images 构建。`
      }
      style={{ marginBottom: 16 }}
    />
  );
}
