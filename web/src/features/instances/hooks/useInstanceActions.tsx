/**
 * Everything a user can do to an instance, each confirmed first with what it costs or destroys:
 * the five actions of the state machine, rename, reset password, renewal and the scheduled stop. Shared by the lists and the
 * detail page; render `holder` once where the hook is used (it holds the rename and renewal dialogs).
 */
import { BILLING_KEYS } from '../../../api/billing';
import { useState, type ReactNode } from 'react';
import { App, Button, Form, Input, Modal, Typography } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { BellOutlined } from '@ant-design/icons';
import { InstanceTaskLabel, PAGE, type GpuSubscriptionRequest, type Instance, type InstanceAction } from '@console/contract';
import { reactToError } from '../../../api/client';
import { ApiError, CLIENT_MESSAGES, isApiError } from '../../../api/errors';
import { INSTANCE_KEYS, instancesApi } from '../api/instances';
import { NOTICE_KEYS, noticesApi } from '../../../api/notices';
import { getApiUi } from '../../../api/ui';
import { actionLabel, actionNotice, diskTargetOf, scheduledStopText } from '../components/instanceViews';
import { RenewModal } from '../components/RenewModal';
import { AutoRenewModal } from '../components/AutoRenewModal';
import { RefundModal } from '../components/RefundModal';
import { ConvertModal, type ConvertMode } from '../components/ConvertModal';
import { BandwidthModal } from '../components/BandwidthModal';
import { MigrateModal } from '../components/MigrateModal';
import { ExpandDiskModal } from '../components/ExpandDiskModal';
import { SaveImageModal } from '../components/SaveImageModal';
import { ScheduledStopModal } from '../components/ScheduledStopModal';
import { HandModal } from '../components/HandModal';

export const NAME_MAX = 30;

/** What a migration does, said before it starts. */
export const MIGRATE_NOTICE =
  '迁移到其他主机：实例的系统盘和数据盘数据将迁移到同地区、同型号且有空闲 GPU 的主机，需要几分钟，期间显示为“数据迁移中”；迁移免费，完成后实例为已关机，新主机的 GPU 会为您保留一段时间（见操作日志），请及时开机，超时未开机则释放、开机时按空闲情况重新分配。';

/** Looks like an instance (the action endpoints answer one); anything else is just "done". */
function isInstance(v: unknown): v is Instance {
  return typeof v === 'object' && v !== null && typeof (v as Instance).id === 'string' && typeof (v as Instance).status === 'string';
}

function useInstanceInvalidation() {
  const queryClient = useQueryClient();
  return {
    /** Put the instance the server answered straight into its detail view, then refresh the lists and the log. */
    settled(answer?: unknown) {
      if (isInstance(answer)) queryClient.setQueryData(INSTANCE_KEYS.one(answer.id), answer);
      void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
      void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.logsAll });
      // Starting may collect arrears, and stopping settles the run: the header balance moves.
      void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
    },
  };
}

function Notice({ instance, children }: { instance: Instance; children: ReactNode }) {
  return (
    <div>
      <Typography.Paragraph type="secondary" style={{ marginBottom: 8 }}>
        实例：{instance.name}（<span className="mono">{instance.id}</span>）
      </Typography.Paragraph>
      <Typography.Paragraph style={{ marginBottom: 0 }}>{children}</Typography.Paragraph>
    </div>
  );
}

export function useInstanceActions() {
  const { modal } = App.useApp();
  const navigate = useNavigate();
  const invalidation = useInstanceInvalidation();
  const queryClient = useQueryClient();
  const [renaming, setRenaming] = useState<Instance | null>(null);
  const [handing, setHanding] = useState<Instance | null>(null);
  const [renewing, setRenewing] = useState<Instance | null>(null);
  const [autoRenewing, setAutoRenewing] = useState<Instance | null>(null);
  const [refunding, setRefunding] = useState<Instance | null>(null);
  const [converting, setConverting] = useState<{ instance: Instance; mode: ConvertMode } | null>(null);
  const [saving, setSaving] = useState<Instance | null>(null);
  const [expanding, setExpanding] = useState<Instance | null>(null);
  const [bandwidth, setBandwidth] = useState<Instance | null>(null);
  const [migrating, setMigrating] = useState<Instance | null>(null);
  const [scheduling, setScheduling] = useState<Instance | null>(null);

  const act = useMutation({
    mutationFn: ({ instance, action }: { instance: Instance; action: InstanceAction }) => instancesApi.act(instance.id, action),
    onSettled: (answer) => invalidation.settled(answer),
  });

  /** 有卡时通知我 from a start refused for busy cards: told once when that many cards are free on one host of the region. */
  const subscribe = useMutation({
    mutationFn: (req: GpuSubscriptionRequest) => noticesApi.subscribe(req),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: NOTICE_KEYS.subscriptions }),
  });

  const reset = useMutation({
    mutationFn: (instance: Instance) => instancesApi.resetPassword(instance.id),
    onSettled: (answer) => invalidation.settled(answer),
  });

  const unschedule = useMutation({
    mutationFn: (instance: Instance) => instancesApi.cancelScheduledStop(instance.id),
    onSettled: (answer) => invalidation.settled(answer),
  });

  /** Asks, then cancels the instance's pending scheduled stop (the dialog, if open, closes). */
  const cancelScheduledStop = (instance: Instance) =>
    modal.confirm({
      title: '取消定时关机？',
      content: <Notice instance={instance}>{instance.scheduledStopAt ? `${scheduledStopText(instance.scheduledStopAt)}，取消后实例将保持运行。` : ''}</Notice>,
      okText: '取消定时关机',
      cancelText: '保留',
      onOk: async () => {
        try {
          await unschedule.mutateAsync(instance);
          setScheduling(null);
        } catch {
          // The request layer has said why.
        }
      },
    });

  /** Runs an action; its failure is shown here (the call itself is silent). Never rejects. */
  const run = async (instance: Instance, action: InstanceAction): Promise<void> => {
    try {
      await act.mutateAsync({ instance, action });
    } catch (e) {
      const error = isApiError(e) ? e : new ApiError('network', CLIENT_MESSAGES.network);
      if (action === 'start' && isApiError(error, 'INSTANCE_GPU_BUSY')) offerNoCard(instance, error);
      else if (isApiError(error, 'INSTANCE_ARREARS')) offerRecharge(error);
      else if (isApiError(error, 'INSTANCE_EXPIRED')) offerRenew(instance, error);
      else reactToError(error, getApiUi());
    }
  };

  /** The host's GPUs are taken: the machine can move to a host with free cards, or start without them. */
  const offerNoCard = (instance: Instance, error: ApiError) => {
    const dialog = modal.confirm({
      title: '开机失败',
      content: (
        <Notice instance={instance}>
          {error.detail ? `${error.message}：${error.detail}` : error.message}
          <br />
          {instance.tasks.includes('migrate') && (
            <>
              {MIGRATE_NOTICE}
              <br />
            </>
          )}
          {actionNotice(instance, 'startNoCard')}
        </Notice>
      ),
      okText: actionLabel('startNoCard'),
      cancelText: '稍后再试',
      footer: (_, { OkBtn, CancelBtn }) => (
        <>
          <CancelBtn />
          {instance.gpuTypeId && (
            <Button
              icon={<BellOutlined />}
              onClick={() => {
                dialog.destroy();
                subscribe.mutate({ gpuTypeId: instance.gpuTypeId!, regionId: instance.regionId, gpuCount: instance.gpuCount });
              }}
            >
              有卡时通知我
            </Button>
          )}
          {instance.tasks.includes('migrate') && (
            <Button
              onClick={() => {
                dialog.destroy();
                confirmMigrate(instance);
              }}
            >
              {InstanceTaskLabel.migrate}
            </Button>
          )}
          <OkBtn />
        </>
      ),
      onOk: () => run(instance, 'startNoCard'),
    });
  };

  /** Moving a stopped machine, data and all, to another host with free cards: the host is chosen (or left to the server) first, free of charge. */
  const confirmMigrate = (instance: Instance) => setMigrating(instance);

  /** In arrears: nothing starts until the balance is settled. */
  const offerRecharge = (error: ApiError) =>
    modal.confirm({
      title: '无法开机',
      content: error.detail ? `${error.message}：${error.detail}` : error.message,
      okText: '去充值',
      cancelText: '取消',
      onOk: () => navigate(PAGE.recharge),
    });

  /** A prepaid instance past its expiry: it starts again once renewed. */
  const offerRenew = (instance: Instance, error: ApiError) =>
    modal.confirm({
      title: '无法开机',
      content: <Notice instance={instance}>{error.detail ? `${error.message}：${error.detail}` : error.message}</Notice>,
      okText: '续费',
      cancelText: '取消',
      onOk: () => setRenewing(instance),
    });

  const confirm = (instance: Instance, action: InstanceAction) => {
    const label = actionLabel(action);
    const destructive = action === 'release';
    modal.confirm({
      title: destructive ? `确认释放实例「${instance.name}」？` : `确认${label}？`,
      content: <Notice instance={instance}>{actionNotice(instance, action)}</Notice>,
      okText: destructive ? '确认释放' : label,
      okButtonProps: destructive ? { danger: true } : undefined,
      cancelText: '取消',
      onOk: () => run(instance, action),
    });
  };

  const resetPassword = (instance: Instance) =>
    modal.confirm({
      title: '重置 SSH 登录密码？',
      content: <Notice instance={instance}>重置后将生成新的登录密码，原密码立即失效。</Notice>,
      okText: '重置密码',
      cancelText: '取消',
      onOk: async () => {
        try {
          const answer = await reset.mutateAsync(instance);
          const password = answer?.access?.sshPassword;
          modal.success({
            title: '密码已重置',
            content: password ? (
              <span>
                新密码：
                <Typography.Text className="mono" copyable={{ text: password, tooltips: ['复制密码', '已复制'] }} aria-label="新密码">
                  {password}
                </Typography.Text>
              </span>
            ) : (
              '新密码已生效，可在“登录信息”中查看。'
            ),
            okText: '知道了',
          });
        } catch {
          // The request layer has said why.
        }
      },
    });

  const holder = (
    <>
      {renaming && <RenameModal key={renaming.id} instance={renaming} onClose={() => setRenaming(null)} onSettled={invalidation.settled} />}
      {handing && <HandModal key={handing.id} instance={handing} onClose={() => setHanding(null)} onSettled={invalidation.settled} />}
      {renewing && <RenewModal key={renewing.id} instance={renewing} onClose={() => setRenewing(null)} onRenewed={() => invalidation.settled()} />}
      {autoRenewing && <AutoRenewModal key={autoRenewing.id} instance={autoRenewing} onClose={() => setAutoRenewing(null)} onSettled={invalidation.settled} />}
      {refunding && <RefundModal key={refunding.id} instance={refunding} onClose={() => setRefunding(null)} onSettled={invalidation.settled} />}
      {converting && (
        <ConvertModal
          key={`${converting.mode}-${converting.instance.id}`}
          instance={converting.instance}
          mode={converting.mode}
          onClose={() => setConverting(null)}
          onConverted={() => invalidation.settled()}
        />
      )}
      {saving && <SaveImageModal key={saving.id} instance={saving} onClose={() => setSaving(null)} />}
      {expanding && <ExpandDiskModal key={expanding.id} target={diskTargetOf(expanding)} onClose={() => setExpanding(null)} />}
      {migrating && (
        <MigrateModal key={migrating.id} instance={migrating} notice={MIGRATE_NOTICE} onClose={() => setMigrating(null)} onSettled={invalidation.settled} />
      )}
      {bandwidth && <BandwidthModal key={bandwidth.id} instance={bandwidth} onClose={() => setBandwidth(null)} />}
      {scheduling && (
        <ScheduledStopModal
          key={scheduling.id}
          instance={scheduling}
          onClose={() => setScheduling(null)}
          onSettled={invalidation.settled}
          onCancelSchedule={() => cancelScheduledStop(scheduling)}
        />
      )}
    </>
  );

  return {
    confirm,
    /** Runs an action without asking (e.g. from a dialog that has already asked). */
    run,
    rename: (instance: Instance) => setRenaming(instance),
    /** Opens 交给子账号 (main accounts only): which child holds and manages the instance. */
    hand: (instance: Instance) => setHanding(instance),
    resetPassword,
    /** Opens the renewal dialog (prepaid instances only: see canRenew). */
    renew: (instance: Instance) => setRenewing(instance),
    /** Opens the auto-renew switch (prepaid instances only). */
    autoRenew: (instance: Instance) => setAutoRenewing(instance),
    /** Opens the 退订 dialog: the refund quote, then release (prepaid instances only). */
    refund: (instance: Instance) => setRefunding(instance),
    /** Opens the 日转月 (a Day instance) or 转长期租用 (a post-paid instance) dialog: quote, then the order to pay. */
    convert: (instance: Instance, mode: ConvertMode) => setConverting({ instance, mode }),
    /** Asks, then moves a stopped instance to another host with free cards (see `tasks`). */
    migrate: confirmMigrate,
    /** Opens the save-as-image dialog (a stopped instance: see `tasks`). */
    saveImage: (instance: Instance) => setSaving(instance),
    /** Opens the data-disk expansion dialog (it says why when the instance cannot be expanded now). */
    expandDisk: (instance: Instance) => setExpanding(instance),
    /** Opens the bandwidth dialog (e-commerce machines: see `bandwidthChoices`). */
    changeBandwidth: (instance: Instance) => setBandwidth(instance),
    /** Opens the 定时关机 dialog (a running instance: see scheduleStopBlocked). */
    scheduleStop: (instance: Instance) => setScheduling(instance),
    /** Asks, then cancels the pending scheduled stop. */
    cancelScheduledStop,
    holder,
    pending: act.isPending ? act.variables : undefined,
  };
}

function RenameModal({ instance, onClose, onSettled }: { instance: Instance; onClose: () => void; onSettled: (answer?: unknown) => void }) {
  const [form] = Form.useForm<{ name: string }>();
  const rename = useMutation({
    mutationFn: (name: string) => instancesApi.rename(instance.id, name),
    onSettled: (answer) => onSettled(answer),
    onSuccess: onClose,
  });
  const submit = async () => {
    const { name } = await form.validateFields();
    if (name.trim() === instance.name) return onClose();
    rename.mutate(name.trim());
  };
  return (
    <Modal
      open
      title="修改实例名称"
      okText="保存"
      cancelText="取消"
      confirmLoading={rename.isPending}
      onOk={() => void submit().catch(() => undefined)}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form form={form} layout="vertical" initialValues={{ name: instance.name }} onFinish={() => void submit().catch(() => undefined)}>
        <Form.Item
          name="name"
          label="实例名称"
          rules={[
            { required: true, whitespace: true, message: '请输入实例名称' },
            { max: NAME_MAX, message: `实例名称最多 ${NAME_MAX} 个字` },
          ]}
        >
          <Input maxLength={NAME_MAX} showCount autoFocus aria-label="实例名称" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
