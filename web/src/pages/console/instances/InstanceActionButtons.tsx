import { Button, Dropdown, Space, Tooltip } from 'antd';
import { DownOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { INSTANCE_ACTIONS, canResetPassword, type Instance, type InstanceAction } from '@console/contract';
import { actionLabel, canRenew, detailPathOf } from './instanceViews';
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
            ...(canRenew(i) ? [{ key: 'renew', label: '续费' }] : []),
            { key: 'rename', label: '重命名', disabled: !canRename(i) },
            { type: 'divider' },
            { key: 'release', label: actionLabel('release'), danger: true, disabled: !allowed(i, 'release') || busy },
          ],
          onClick: ({ key }) => (key === 'rename' ? actions.rename(i) : key === 'renew' ? actions.renew(i) : actions.confirm(i, key as InstanceAction)),
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
    </Space>
  );
}
