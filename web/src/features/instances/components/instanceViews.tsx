/**
 * How an instance is shown wherever it appears: its status, configuration, billing and access,
 * what each action costs, and where its list, detail and purchase pages are.
 */
import { Button, Flex, Space, Tag, Tooltip, Typography } from 'antd';
import { ClockCircleOutlined, SyncOutlined } from '@ant-design/icons';
import { formatMinute } from '../../../lib/time';
import { Link } from 'react-router';
import {
  BUSY_STATUSES,
  BillingCycle,
  InstanceActionLabel,
  InstanceStatus,
  InstanceStatusColor,
  InstanceTaskLabel,
  PAGE,
  TASK_FROM,
  formatYuan,
  isPostpaid,
  type BillingCycle as Cycle,
  type Instance,
  type InstanceAction,
  type InstanceCategory,
  type InstanceStatus as Status,
  type InstanceTask,
} from '@console/contract';
import type { DiskTarget } from './ExpandDiskModal';
import { formatTime } from '../../../components/orderViews';
import { Price } from '../../../components/Price';

/** antd Tag colours for the contract's status colours (grey is antd's default tag). */
export const STATUS_TAG_COLOR = { green: 'success', red: 'error', grey: undefined, purple: 'purple', orange: 'warning', blue: 'processing' } as const;

export const isBusy = (status: Status) => BUSY_STATUSES.includes(status);
/** While an instance on screen is mid-operation its view refreshes itself this often (ms). */
export const BUSY_POLL_MS = 2000;

/** Usage and Hour are post-paid by the hour; Day, Week and Month are prepaid until expireAt (DESIGN.md). */

/** Prepaid instances can be renewed (more of their own cycle) unless they are being destroyed or never came up. */
export const canRenew = (i: Pick<Instance, 'cycle' | 'status'>) => !isPostpaid(i.cycle) && i.status !== 'Deleting' && i.status !== 'Failed';

/** 日转月 is offered for a live Day instance that has not expired; 转长期租用 for a live post-paid one. */
export const canDayToMonth = (i: Pick<Instance, 'cycle' | 'status' | 'expireAt'>, now = Date.now()) =>
  i.cycle === 'Day' && canRenew(i) && i.status !== 'Pending' && i.expireAt !== null && Date.parse(i.expireAt) > now;
export const canTransferToLong = (i: Pick<Instance, 'cycle' | 'status'>) =>
  isPostpaid(i.cycle) && i.status !== 'Deleting' && i.status !== 'Failed' && i.status !== 'Pending';

/** 退订 is offered for a prepaid instance that could be released now and has not expired. */
export const canRefund = (i: Pick<Instance, 'cycle' | 'actions' | 'expireAt'>, now = Date.now()) =>
  !isPostpaid(i.cycle) && i.actions.includes('release') && i.expireAt !== null && Date.parse(i.expireAt) > now;

/** The longest renewal offered at once, in the instance's own unit (天/周/月). */
export const RENEW_MAX_DURATION = 12;

/** Hours in one unit of each prepaid cycle: a month is 30 days (mirrored from the service's pricing). */
const RENEW_UNIT_HOURS: Record<Cycle, number> = { Usage: 1, Hour: 1, Day: 24, Week: 168, Month: 720 };

/** Where a renewal of `duration` units takes expireAt: from the current expiry, or from now once it has passed. */
export function renewedExpiry(i: Pick<Instance, 'cycle' | 'expireAt'>, duration: number, now: number = Date.now()): string {
  const expire = i.expireAt ? new Date(i.expireAt).getTime() : 0;
  return new Date(Math.max(expire, now) + RENEW_UNIT_HOURS[i.cycle] * duration * 3600_000).toISOString();
}

/** A prepaid instance's term as the renewal dialogs show it: its cycle and current expiry (Descriptions items). */
export function prepaidTermItems(i: Pick<Instance, 'cycle' | 'expireAt'>) {
  return [
    { key: 'cycle', label: '计费方式', children: `${BillingCycle.label(i.cycle)}（包周期，预付费）` },
    { key: 'expire', label: '当前到期时间', children: formatTime(i.expireAt) },
  ];
}

/** Why a task (save image, expand disk) cannot run now; null when `tasks` allows it. */
export function taskBlocked(i: Pick<Instance, 'status' | 'tasks' | 'expireAt'>, task: InstanceTask): string | null {
  if (i.tasks.includes(task)) return null;
  const what = InstanceTaskLabel[task];
  // In a status the task may start from, only an expiry keeps it from being offered.
  if (TASK_FROM[task].includes(i.status)) return `实例已到期，请先续费再${what}`;
  const on: Status[] = ['Running', 'Starting', 'Restarting', 'Stopping', 'Shutdowning'];
  return on.includes(i.status) ? `实例${InstanceStatus.label(i.status)}，请先关机再${what}` : `实例${InstanceStatus.label(i.status)}，暂不能${what}`;
}

/** Where a stop may be scheduled (mirrored from the server): a machine that runs or is on its way up. */
const SCHEDULABLE: readonly Status[] = ['Pending', 'Starting', 'Restarting', 'Running'];

/** "将于 2026-11-26 08:00 关机": how a pending scheduled stop (定时关机) is said everywhere. */
export const scheduledStopText = (at: string) => `将于 ${formatMinute(at)} 关机`;

/** The pending scheduled stop under an instance's status, with 取消 when the viewer may cancel it. */
export function ScheduledStopNote({ instance: i, onCancel }: { instance: Pick<Instance, 'scheduledStopAt'>; onCancel?: () => void }) {
  if (!i.scheduledStopAt) return null;
  return (
    <Typography.Text type="warning" style={{ fontSize: 12 }}>
      <ClockCircleOutlined /> {scheduledStopText(i.scheduledStopAt)}
      {onCancel && (
        <Button type="link" size="small" onClick={onCancel} style={{ padding: '0 4px', height: 'auto', fontSize: 12 }}>
          取消
        </Button>
      )}
    </Typography.Text>
  );
}

/** Why 定时关机 cannot be set now; null when it can. */
export function scheduleStopBlocked(i: Pick<Instance, 'status'>): string | null {
  if (SCHEDULABLE.includes(i.status)) return null;
  if (i.status === 'Stopped' || i.status === 'Shutdown') return '实例已关机，无需定时关机';
  return `实例${InstanceStatus.label(i.status)}，不能设置定时关机`;
}

/** The expansion dialog's view of an instance. */
export function diskTargetOf(i: Instance): DiskTarget {
  return {
    id: i.id,
    name: i.name,
    sizeGb: i.dataDiskGb,
    freeGb: i.freeDataDiskGb,
    prepaid: !isPostpaid(i.cycle),
    expireAt: i.expireAt,
    blocked: taskBlocked(i, 'resizeDisk'),
  };
}

/** The status tag; on a live view it spins while an operation is under way (`live={false}` in history). */
export function InstanceStatusTag({ status, live = true }: { status: Status; live?: boolean }) {
  return (
    <Tag color={STATUS_TAG_COLOR[InstanceStatusColor[status]]} icon={live && isBusy(status) ? <SyncOutlined spin /> : undefined} style={{ marginInlineEnd: 0 }}>
      {InstanceStatus.label(status)}
    </Tag>
  );
}

/** What an Unknown instance's tag says: its host stopped answering (the reason is the tooltip). */
export const HOST_LOST_TAG = '主机异常';

/**
 * Status plus, when the last operation failed, the display-only OperateFail tag (with the reason);
 * for an Unknown instance — its host stopped answering — 主机异常 instead.
 */
export function InstanceStatusTags({ instance }: { instance: Pick<Instance, 'status' | 'lastError' | 'noCard'> }) {
  const hostLost = instance.status === 'Unknown';
  return (
    <Space size={4} wrap>
      <InstanceStatusTag status={instance.status} />
      {hostLost && (
        <Tooltip title={instance.lastError ?? '实例所在主机暂时失联，期间不计费，恢复后会自动更新状态'}>
          <Tag color="error" style={{ marginInlineEnd: 0 }}>
            {HOST_LOST_TAG}
          </Tag>
        </Tooltip>
      )}
      {!hostLost && instance.lastError && (
        <Tooltip title={instance.lastError}>
          <span>
            <InstanceStatusTag status="OperateFail" />
          </span>
        </Tooltip>
      )}
    </Space>
  );
}

/** "RTX 4090 × 2" for GPU machines; the CPU/memory summary for the others (and below, for GPUs). */
export function configSummary(i: Pick<Instance, 'gpuName' | 'gpuCount' | 'spec'>): string {
  return i.gpuName && i.gpuCount > 0 ? `${i.gpuName} × ${i.gpuCount}` : i.spec;
}

/** The CPU and memory the machine has now: in no-card mode the operator's reduced size, not its own. */
export const currentSpec = (i: Pick<Instance, 'noCard' | 'spec' | 'noCardSpec'>) => (i.noCard && i.noCardSpec ? i.noCardSpec : i.spec);

export function ConfigCell({ instance: i }: { instance: Instance }) {
  const gpu = i.gpuName && i.gpuCount > 0;
  return (
    <Flex vertical gap={2}>
      <span>
        {configSummary(i)}
        {i.noCard && (
          <Tooltip title={`无卡模式不挂载 GPU，CPU 和内存也减为 ${currentSpec(i)}；有卡开机后恢复为 ${i.spec}`}>
            <Tag color="orange" style={{ marginInlineStart: 6 }}>
              无卡模式
            </Tag>
          </Tooltip>
        )}
      </span>
      {gpu && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {currentSpec(i)}
        </Typography.Text>
      )}
    </Flex>
  );
}

/** The price that runs now: the no-card rate in no-card mode, otherwise the GPU rate. */
export const currentHourlyPrice = (i: Pick<Instance, 'noCard' | 'hourlyPrice' | 'noCardHourlyPrice'>) => (i.noCard ? i.noCardHourlyPrice : i.hourlyPrice);

export function BillingCell({ instance: i }: { instance: Instance }) {
  return (
    <Flex vertical gap={2}>
      <span>
        <Tag style={{ marginInlineEnd: 6 }}>{BillingCycle.label(i.cycle)}</Tag>
        {isPostpaid(i.cycle) && <Price units={currentHourlyPrice(i)} per="小时" size="sm" />}
      </span>
      {/* Own lines, so a date never runs under the fixed action column. */}
      {!isPostpaid(i.cycle) && <Typography.Text style={{ fontSize: 12, whiteSpace: 'nowrap' }}>到期 {formatTime(i.expireAt)}</Typography.Text>}
      {i.releaseAt && (
        <Typography.Text type="warning" style={{ fontSize: 12, whiteSpace: 'nowrap' }}>
          {formatTime(i.releaseAt)} 释放
        </Typography.Text>
      )}
    </Flex>
  );
}

/** 账号中心's SSH 公钥 tab, where the keys of an instance's 公钥登录 command are managed. */
export const SSH_KEYS_PAGE = `${PAGE.account}?tab=sshKeys`;

/** Login and links. SSH details are shown whenever the instance has them; the web links only while it runs. */
export function AccessCell({ instance: i }: { instance: Instance }) {
  const a = i.access;
  if (!a) return <Typography.Text type="secondary">--</Typography.Text>;
  const running = i.status === 'Running';
  return (
    <Flex vertical gap={2} style={{ minWidth: 0 }}>
      {/* Commands show whole, wrapped where they must be: a cut one cannot be read off or typed. */}
      <Typography.Text
        className="mono"
        style={{ fontSize: 12, maxWidth: '100%', wordBreak: 'break-all' }}
        copyable={{ text: a.sshCommand, tooltips: ['复制登录指令', '已复制'] }}
        type={running ? undefined : 'secondary'}
      >
        {a.sshCommand}
      </Typography.Text>
      {a.sshKeyCommand && (
        <Flex gap={4} align="baseline" style={{ minWidth: 0 }}>
          <Typography.Text type="secondary" style={{ fontSize: 12, whiteSpace: 'nowrap' }}>
            公钥登录
          </Typography.Text>
          <Typography.Text
            className="mono"
            style={{ fontSize: 12, minWidth: 0, wordBreak: 'break-all' }}
            copyable={{ text: a.sshKeyCommand, tooltips: ['复制公钥登录指令', '已复制'] }}
            type={running ? undefined : 'secondary'}
          >
            {a.sshKeyCommand}
          </Typography.Text>
        </Flex>
      )}
      <Space size={12} wrap>
        <Typography.Text style={{ fontSize: 12 }} type="secondary" copyable={{ text: a.sshPassword, tooltips: ['复制密码', '已复制'] }}>
          密码
        </Typography.Text>
        {a.sshKeyCommand && (
          <Link to={SSH_KEYS_PAGE} style={{ fontSize: 12 }}>
            管理公钥
          </Link>
        )}
        {running && a.terminal && (
          <Link to={`${detailPathOf(i)}?tab=terminal`} style={{ fontSize: 12 }}>
            终端
          </Link>
        )}
        {running && a.jupyterUrl && (
          <a href={a.jupyterUrl} target="_blank" rel="noreferrer" style={{ fontSize: 12 }}>
            JupyterLab
          </a>
        )}
        {running && !a.jupyterUrl && a.missing?.jupyter && (
          <Tooltip title={a.missing.jupyter}>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              JupyterLab 不可用
            </Typography.Text>
          </Tooltip>
        )}
        {running && a.appUrl && (
          <a href={a.appUrl} target="_blank" rel="noreferrer" style={{ fontSize: 12 }}>
            打开应用
          </a>
        )}
        {running && a.desktop && (
          <Link to={PAGE.rdp.replace(':id', encodeURIComponent(i.id))} style={{ fontSize: 12 }}>
            远程桌面
          </Link>
        )}
      </Space>
    </Flex>
  );
}

/**
 * What an action costs or destroys, said in the confirmation before it is taken. Post-paid
 * instances are metered by the hour; prepaid ones have paid until expireAt.
 */
export function actionNotice(i: Instance, action: InstanceAction): string {
  const postPaid = isPostpaid(i.cycle);
  const yuan = (units: string) => `¥${formatYuan(units)}`;
  switch (action) {
    case 'start':
      return postPaid
        ? `开机后按 ${yuan(i.hourlyPrice)}/小时 计费（按量）`
        : `该实例为包周期（${BillingCycle.label(i.cycle)}）实例，已付费至 ${formatTime(i.expireAt)}，开机不另外计费`;
    case 'startNoCard': {
      const size = i.noCardSpec ? `不挂载 GPU，只分配 ${i.noCardSpec}` : '不挂载 GPU';
      return BigInt(i.noCardHourlyPrice) > 0n
        ? `无卡模式${size}，按 ${yuan(i.noCardHourlyPrice)}/小时 计费，适合上传数据、配置环境`
        : `无卡模式${size}，不另外计费，适合上传数据、配置环境`;
    }
    case 'stop': {
      if (!postPaid) return `包周期实例关机不退还费用，到期时间不变（${formatTime(i.expireAt)}）`;
      // Spaces around Latin words only: "停止 GPU 计费", "停止无卡模式计费"; a machine without cards stops "实例" billing.
      const what = i.noCard ? '无卡模式' : i.gpuCount === 0 ? '实例' : ' GPU ';
      return BigInt(i.diskDailyPrice) > 0n
        ? `关机后停止${what}计费；超出免费部分的数据盘仍按 ${yuan(i.diskDailyPrice)}/天 按小时计费`
        : `关机后停止${what}计费；数据盘未超出免费容量（${i.freeDataDiskGb} GB），不产生费用`;
    }
    case 'restart':
      return '重启期间实例暂时无法访问，正在运行的程序会被中断；计费方式不变';
    case 'release':
      return '释放后数据盘和系统盘的数据将被清除且无法恢复';
  }
}

export const actionLabel = (action: InstanceAction) => InstanceActionLabel[action];

/** The console list of each category (spec §2); CPU instances live one level below /console/generic. */
export function listPathOf(category: InstanceCategory): string {
  const paths: Record<InstanceCategory, string> = {
    Gpu: PAGE.gpuGeneric,
    App: PAGE.app,
    Game: PAGE.game,
    Generic: PAGE.cpu,
    Desktop: PAGE.desktop,
    Ebusiness: PAGE.ebusiness,
  };
  return paths[category];
}

/** Where to buy another one: the GPU purchase page for GPU instances and applications, the size page for the rest. */
export function purchasePathOf(category: InstanceCategory): string {
  return category === 'Gpu' || category === 'App' ? PAGE.purchase : `${PAGE.purchase}?category=${category}`;
}

/** /console/ipvm/detail/:type/:id, with the category as the type. */
export function detailPathOf(i: Pick<Instance, 'id' | 'category'>): string {
  return PAGE.ipvmDetail.replace(':type', encodeURIComponent(i.category)).replace(':id', encodeURIComponent(i.id));
}
