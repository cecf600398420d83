/**
 * What each kind of notice says. A producer builds its notice here and hands it to
 * NoticeService.send: the same words reach the 站内信, the e-mail and the outbox SMS, and `params`
 * are the variables of the kind's provider SMS template (documented in the README).
 */
import { PAGE, formatBeijing, formatYuan, type NoticeKind } from '@console/contract';

export interface Notice {
  kind: NoticeKind;
  title: string;
  /** The whole message, as the 站内信, the e-mail and the outbox SMS say it. */
  body: string;
  /** The variables of the kind's SMS template (Aliyun TemplateParam). */
  params: Record<string, string>;
  /** Where the console shows what it is about. */
  link?: string | null;
  /** What the notice is about (an instance id) and which occasion (a date and stage): sent once per pair. */
  subject?: string | null;
  period?: string | null;
}

/** What a notice needs to know of an instance. */
export interface NoticeInstance {
  id: string;
  name: string;
  category: string;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

function instanceLink(i: NoticeInstance): string {
  return PAGE.ipvmDetail.replace(':type', encodeURIComponent(i.category)).replace(':id', encodeURIComponent(i.id));
}

/** "7 天", "1 天", "2 小时": how long before something happens, as a notice says it. */
export function leadText(ms: number): string {
  return ms % DAY_MS === 0 ? `${ms / DAY_MS} 天` : `${Math.max(1, Math.round(ms / HOUR_MS))} 小时`;
}

export const notices = {
  /** The spendable balance would not pay the running post-paid instances for `hours` hours. */
  balanceLow(p: { spendable: bigint; hourly: bigint; hours: number; since: Date }): Notice {
    const balance = formatYuan(p.spendable);
    const hourly = formatYuan(p.hourly);
    return {
      kind: 'BalanceLow',
      title: '余额不足提醒',
      body: `您的可用余额 ${balance} 元，不足以支付按量实例 ${p.hours} 小时的费用（当前每小时约 ${hourly} 元）。余额耗尽后实例将自动关机，请及时充值。`,
      params: { balance, hourly, hours: String(p.hours) },
      link: PAGE.recharge,
      period: String(p.since.getTime()),
    };
  },

  /** A post-paid instance stopped because the balance ran out or fell below the holder's floor (余额保底); `why` says how. */
  stoppedForArrears(p: { instance: NoticeInstance; why: string; cause: 'balance' | 'floor'; at: Date }): Notice {
    return {
      kind: 'StoppedForArrears',
      title: p.cause === 'floor' ? `实例「${p.instance.name}」因余额低于保底金额已关机` : `实例「${p.instance.name}」因余额不足已关机`,
      body: `您的按量实例「${p.instance.name}」因${p.why}已自动关机。充值后可在控制台重新开机，数据盘数据保留。`,
      params: { name: p.instance.name },
      link: instanceLink(p.instance),
      subject: p.instance.id,
      period: String(p.at.getTime()),
    };
  },

  /** A prepaid instance expires in `lead` (no auto-renew). */
  prepaidExpiring(p: { instance: NoticeInstance; expireAt: Date; lead: number }): Notice {
    const time = formatBeijing(p.expireAt);
    return {
      kind: 'PrepaidExpiring',
      title: `实例「${p.instance.name}」即将到期`,
      body: `您的实例「${p.instance.name}」将于 ${time} 到期（还有约 ${leadText(p.lead)}），到期后将自动关机。如需继续使用，请在此之前续费或开启自动续费。`,
      params: { name: p.instance.name, time },
      link: instanceLink(p.instance),
      subject: p.instance.id,
      period: `${p.expireAt.toISOString()}:${p.lead}`,
    };
  },

  /** Auto-renewal could not be paid: the instance will stop at expiry unless topped up. */
  autoRenewFailed(p: { instance: NoticeInstance; expireAt: Date; total: bigint }): Notice {
    const time = formatBeijing(p.expireAt);
    const amount = formatYuan(p.total);
    return {
      kind: 'PrepaidExpiring',
      title: `实例「${p.instance.name}」自动续费失败`,
      body: `您的实例「${p.instance.name}」自动续费失败：余额不足 ${amount} 元。请在 ${time} 到期前充值，否则实例将到期关机。`,
      params: { name: p.instance.name, time, amount },
      link: instanceLink(p.instance),
      subject: p.instance.id,
      period: `${p.expireAt.toISOString()}:autoRenew`,
    };
  },

  /** A prepaid instance expired and was stopped; it is released at `releaseAt` unless renewed. */
  prepaidExpired(p: { instance: NoticeInstance; expireAt: Date; releaseAt: Date }): Notice {
    const time = formatBeijing(p.releaseAt);
    return {
      kind: 'PrepaidExpiring',
      title: `实例「${p.instance.name}」已到期关机`,
      body: `您的实例「${p.instance.name}」已到期并关机，将于 ${time} 释放，请在此之前续费或备份数据。`,
      params: { name: p.instance.name, time },
      link: instanceLink(p.instance),
      subject: p.instance.id,
      period: `${p.expireAt.toISOString()}:expired`,
    };
  },

  /** A stopped instance is released at `releaseAt`: said 7 days (`final` false) and 1 day (`final`) before. */
  releaseCountdown(p: { instance: NoticeInstance; releaseAt: Date; lead: number; final: boolean }): Notice {
    const time = formatBeijing(p.releaseAt);
    const lead = leadText(p.lead);
    return {
      kind: 'ReleaseCountdown',
      title: `实例「${p.instance.name}」将于 ${lead}后释放`,
      body: p.final
        ? `您的实例「${p.instance.name}」将于 ${time} 释放，数据将被清除且无法恢复。如需保留，请在此之前开机或续费。`
        : `您的实例「${p.instance.name}」已关机，将于 ${time} 释放（还有约 ${lead}），数据将被清除且无法恢复。如需保留，请在此之前开机或续费。`,
      params: { name: p.instance.name, time, days: lead },
      link: instanceLink(p.instance),
      subject: p.instance.id,
      period: `${p.releaseAt.toISOString()}:${p.final ? 'final' : 'first'}`,
    };
  },

  /** Cards of a subscribed type are free in the region again (told once per subscription). */
  gpuAvailable(p: { subscriptionId: string; gpuTypeId: string; gpuName: string; regionId: string; regionName: string; gpuCount: number }): Notice {
    const cards = p.gpuCount > 1 ? `单机 ${p.gpuCount} 卡` : '空闲卡';
    const q = new URLSearchParams({ regionId: p.regionId, gpuTypeId: p.gpuTypeId, ...(p.gpuCount > 1 ? { gpuCount: String(p.gpuCount) } : {}) });
    return {
      kind: 'GpuAvailable',
      title: `${p.regionName} ${p.gpuName} 有卡了`,
      body: `您订阅的 ${p.regionName} ${p.gpuName} 现在有${cards}了。空闲卡随时可能被租走，请尽快前往算力市场租用，或为关机中的实例开机 / 迁移。`,
      params: { gpu: p.gpuName, region: p.regionName },
      link: `${PAGE.cloudGpu}?${q.toString()}`,
      subject: p.subscriptionId,
      period: 'available',
    };
  },

  /** Anything else that happened to an instance (creation failed, host lost, a failed task). */
  instanceEvent(p: { instance: NoticeInstance; text: string }): Notice {
    return {
      kind: 'InstanceEvent',
      title: `实例「${p.instance.name}」状态通知`,
      body: p.text,
      params: { name: p.instance.name },
      link: instanceLink(p.instance),
      subject: p.instance.id,
    };
  },
};
