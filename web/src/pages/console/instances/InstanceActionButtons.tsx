import { Button, Dropdown, Space, Tooltip } from 'antd';
import { DownOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { INSTANCE_ACTIONS, canResetPassword, type Instance, type InstanceAction } from '@console/contract';
import { actionLabel, canDayToMonth, canRefund, canRenew, canTransferToLong, detailPathOf, taskBlocked } from './instanceViews';
import type { useInstanceActions } from './useInstanceActions';

type Actions = ReturnType<typeof useInstanceActions>;

/** Allowed now: the server computes `actions` from the state machine and the caller's permissions. */
const allowed = (i: Instance, a: InstanceAction) => i.actions.includes(a);
const canRename = (i: Instance) => i.status !== 'Deleting';
/** The server resets a password only on a settled machine that exists (not in the contract: mirrored from the service). */
const mayResetPassword = (i: Instance) => i.access !== null && canResetPassword(i.status);

/** Why a greyed-out action is greyed out. */
const notNow = (a: InstanceAction) => `当前状态不能${actionLabel(a)}`;

/** A table row: 详情, 开机 and 关机 inline, the rest under 更多. */
export function InstanceRowActions({ instance: i, actions }: { instance: Instance; actions: Actions }) {
  const busy = actions.pending?.instance.id === i.id;
  return (
    <Space size={0} wrap className="instance-ops">
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
          items: [
            { key: 'startNoCard', label: actionLabel('startNoCard'), disabled: !allowed(i, 'startNoCard') || busy },
            { key: 'restart', label: actionLabel('restart'), disabled: !allowed(i, 'restart') || busy },
            // Only prepaid instances have anything to renew: post-paid ones do not show it at all.
            ...(canRenew(i)
              ? [
                  { key: 'renew', label: '续费' },
                  { key: 'autoRenew', label: i.autoRenew ? '自动续费（已开启）' : '自动续费' },
                ]
              : []),
            ...(canDayToMonth(i) ? [{ key: 'dayToMonth', label: '日转月' }] : []),
            ...(canTransferToLong(i) ? [{ key: 'transfer', label: '转长期租用' }] : []),
            { key: 'rename', label: '重命名', disabled: !canRename(i) },
            { key: 'saveImage', label: '保存镜像', disabled: !i.tasks.includes('saveImage') },
            { key: 'expandDisk', label: '数据盘扩容', disabled: !i.tasks.includes('resizeDisk') },
            { key: 'migrate', label: '迁移', disabled: !i.tasks.includes('migrate') || busy },
            // Only e-commerce machines have a bandwidth to change: the others do not show it at all.
            ...(i.bandwidthChoices.length > 1 ? [{ key: 'bandwidth', label: '调整带宽', disabled: !i.tasks.includes('changeBandwidth') || busy }] : []),
            { type: 'divider' },
            // 退订: a prepaid instance, stopped and not yet expired (the dialog shows the server's reason otherwise).
            ...(canRenew(i) ? [{ key: 'refund', label: '退订', danger: true, disabled: !canRefund(i) || busy }] : []),
            { key: 'release', label: actionLabel('release'), danger: true, disabled: !allowed(i, 'release') || busy },
          ],
          onClick: ({ key }) => {
            if (key === 'rename') actions.rename(i);
            else if (key === 'renew') actions.renew(i);
            else if (key === 'autoRenew') actions.autoRenew(i);
            else if (key === 'refund') actions.refund(i);
            else if (key === 'dayToMonth') actions.convert(i, 'dayToMonth');
            else if (key === 'transfer') actions.convert(i, 'transfer');
            else if (key === 'saveImage') actions.saveImage(i);
            else if (key === 'expandDisk') actions.expandDisk(i);
            else if (key === 'migrate') actions.migrate(i);
            else if (key === 'bandwidth') actions.changeBandwidth(i);
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
          <Tooltip key={a} title={notNow(a)}>
            {button}
          </Tooltip>
        );
      })}
      {canRenew(i) && <Button onClick={() => actions.renew(i)}>续费</Button>}
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
