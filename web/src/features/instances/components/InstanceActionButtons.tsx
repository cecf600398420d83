import type { ReactNode } from 'react';
import { Button, Dropdown, Flex, Space, Tooltip, type MenuProps } from 'antd';
import { DownOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { INSTANCE_ACTIONS, InstanceStatus, canResetPassword, type Instance, type InstanceAction } from '@console/contract';
import { actionLabel, canDayToMonth, canRefund, canRenew, canTransferToLong, detailPathOf, isBusy, scheduleStopBlocked, taskBlocked } from './instanceViews';
import type { useInstanceActions } from '../hooks/useInstanceActions';
import { useSession } from '../../../session/useSession';

type Actions = ReturnType<typeof useInstanceActions>;

/** Allowed now: the server computes `actions` from the state machine and the caller's permissions. */
const allowed = (i: Instance, a: InstanceAction) => i.actions.includes(a);
const canRename = (i: Instance) => i.status !== 'Deleting';
/** The server resets a password only on a settled machine that exists (not in the contract: mirrored from the service). */
const mayResetPassword = (i: Instance) => i.access !== null && canResetPassword(i.status);

/** What an operation just submitted on this instance says while it waits for the server. */
const SUBMITTING = '操作提交中，请稍候';

/** Why an action the state machine does not allow now is greyed out, and what to do instead; null when allowed. */
export function actionBlocked(i: Pick<Instance, 'status' | 'actions'>, a: InstanceAction): string | null {
  if (i.actions.includes(a)) return null;
  const status = InstanceStatus.label(i.status);
  if (i.status === 'Running') {
    if (a === 'release') return '运行中的实例不能释放，请先关机';
    if (a === 'start') return '实例已在运行';
    if (a === 'startNoCard') return '实例运行中，请先关机再以无卡模式开机';
  }
  if (isBusy(i.status)) return `实例${status}，请等待当前操作完成`;
  if (a === 'stop' || a === 'restart') return `实例未运行，不能${actionLabel(a)}`;
  return `实例${status}，不能${actionLabel(a)}`;
}

/** Why 退订 is greyed out (it is offered only for prepaid instances). */
function refundBlocked(i: Instance): string | null {
  if (canRefund(i)) return null;
  if (i.expireAt !== null && Date.parse(i.expireAt) <= Date.now()) return '实例已到期，没有可退的时长';
  return i.status === 'Running' ? '运行中的实例不能退订，请先关机' : (actionBlocked(i, 'release') ?? '当前不能退订');
}

/** A 更多 menu item: greyed out with its reason on a second line when `why` says it cannot be used now. */
function menuItem(key: string, label: ReactNode, why: string | null, extra: { danger?: boolean } = {}) {
  return {
    key,
    danger: extra.danger,
    disabled: why !== null,
    label:
      why === null ? (
        label
      ) : (
        <Flex vertical title={why}>
          <span className="menu-item-label">{label}</span>
          <span className="menu-item-reason">{why}</span>
        </Flex>
      ),
  };
}

/** A table row: 详情, 开机 and 关机 inline, the rest under 更多. */
export function InstanceRowActions({ instance: i, actions }: { instance: Instance; actions: Actions }) {
  const busy = actions.pending?.instance.id === i.id;
  // Only a main account hands instances to its children.
  const mainAccount = useSession().user?.isChild === false;
  return (
    <Space size={0} className="instance-ops" style={{ whiteSpace: 'nowrap' }}>
      <Link to={detailPathOf(i)} className="bill-op-link">
        详情
      </Link>
      {(['start', 'stop'] as const).map((a) => (
        <Button key={a} type="link" size="small" disabled={!allowed(i, a) || busy} onClick={() => actions.confirm(i, a)}>
          {actionLabel(a)}
        </Button>
      ))}
      <Dropdown
        trigger={['click']}
        menu={{
          items: moreItems(i, busy, mainAccount),
          onClick: ({ key }) => {
            if (key === 'rename') actions.rename(i);
            else if (key === 'hand') actions.hand(i);
            else if (key === 'renew') actions.renew(i);
            else if (key === 'autoRenew') actions.autoRenew(i);
            else if (key === 'refund') actions.refund(i);
            else if (key === 'dayToMonth') actions.convert(i, 'dayToMonth');
            else if (key === 'transfer') actions.convert(i, 'transfer');
            else if (key === 'saveImage') actions.saveImage(i);
            else if (key === 'expandDisk') actions.expandDisk(i);
            else if (key === 'migrate') actions.migrate(i);
            else if (key === 'bandwidth') actions.changeBandwidth(i);
            else if (key === 'scheduleStop') actions.scheduleStop(i);
            else actions.confirm(i, key as InstanceAction);
          },
        }}
      >
        <Button type="link" size="small" aria-label={`更多操作 ${i.name}`}>
          更多 <DownOutlined />
        </Button>
      </Dropdown>
    </Space>
  );
}

/** The 更多 menu of a row: every item greyed out with the reason when it cannot be used now. */
function moreItems(i: Instance, busy: boolean, mainAccount: boolean): MenuProps['items'] {
  const submitting = busy ? SUBMITTING : null;
  // No-card mode and migration are about cards: a machine without any never has them.
  const cardless = i.gpuCount === 0;
  return [
    // A machine without cards has no no-card mode to start in: the item is not offered at all.
    ...(cardless ? [] : [menuItem('startNoCard', actionLabel('startNoCard'), submitting ?? actionBlocked(i, 'startNoCard'))]),
    menuItem('restart', actionLabel('restart'), submitting ?? actionBlocked(i, 'restart')),
    menuItem('scheduleStop', i.scheduledStopAt ? '定时关机（已设置）' : '定时关机', submitting ?? scheduleStopBlocked(i)),
    // Only prepaid instances have anything to renew: post-paid ones do not show it at all.
    ...(canRenew(i)
      ? [
          { key: 'renew', label: '续费' },
          { key: 'autoRenew', label: i.autoRenew ? '自动续费（已开启）' : '自动续费' },
        ]
      : []),
    ...(canDayToMonth(i) ? [{ key: 'dayToMonth', label: '日转月' }] : []),
    ...(canTransferToLong(i) ? [{ key: 'transfer', label: '转长期租用' }] : []),
    menuItem('rename', '重命名', canRename(i) ? null : `实例${InstanceStatus.label(i.status)}，不能重命名`),
    ...(mainAccount ? [{ key: 'hand', label: '交给子账号' }] : []),
    menuItem('saveImage', '保存镜像', taskBlocked(i, 'saveImage')),
    menuItem('expandDisk', '数据盘扩容', taskBlocked(i, 'resizeDisk')),
    menuItem('migrate', '迁移', cardless ? '只有 GPU 实例可以迁移到其他主机' : (submitting ?? taskBlocked(i, 'migrate'))),
    // Only e-commerce machines have a bandwidth to change: the others do not show it at all.
    ...(i.bandwidthChoices.length > 1 ? [menuItem('bandwidth', '调整带宽', submitting ?? taskBlocked(i, 'changeBandwidth'))] : []),
    { type: 'divider' as const },
    // 退订: a prepaid instance, stopped and not yet expired.
    ...(canRenew(i) ? [menuItem('refund', '退订', submitting ?? refundBlocked(i), { danger: true })] : []),
    menuItem('release', actionLabel('release'), submitting ?? actionBlocked(i, 'release'), { danger: true }),
  ];
}

/** The detail page header: every action as a button, greyed out (with the reason) when not allowed now. */
export function InstanceActionBar({ instance: i, actions }: { instance: Instance; actions: Actions }) {
  const busy = actions.pending?.instance.id === i.id;
  return (
    <Space wrap>
      {INSTANCE_ACTIONS.map((a) => {
        const ok = allowed(i, a);
        const button = (
          <Button
            key={a}
            type={a === 'start' ? 'primary' : 'default'}
            danger={a === 'release'}
            disabled={!ok || busy}
            loading={busy && actions.pending?.action === a}
            onClick={() => actions.confirm(i, a)}
          >
            {actionLabel(a)}
          </Button>
        );
        return ok ? (
          button
        ) : (
          <Tooltip key={a} title={busy ? SUBMITTING : actionBlocked(i, a)}>
            {button}
          </Tooltip>
        );
      })}
      {canRenew(i) && <Button onClick={() => actions.renew(i)}>续费</Button>}
      {(() => {
        const why = scheduleStopBlocked(i);
        const button = (
          <Button disabled={why !== null} onClick={() => actions.scheduleStop(i)}>
            {i.scheduledStopAt ? '定时关机（已设置）' : '定时关机'}
          </Button>
        );
        return why ? <Tooltip title={why}>{button}</Tooltip> : button;
      })()}
      <Button disabled={!canRename(i)} onClick={() => actions.rename(i)}>
        重命名
      </Button>
      <Button disabled={!mayResetPassword(i)} onClick={() => actions.resetPassword(i)}>
        重置密码
      </Button>
      {(() => {
        const why = taskBlocked(i, 'saveImage');
        const button = (
          <Button disabled={why !== null} onClick={() => actions.saveImage(i)}>
            保存镜像
          </Button>
        );
        return why ? <Tooltip title={why}>{button}</Tooltip> : button;
      })()}
    </Space>
  );
}
