/**
 * 交给子账号: the main account hands an instance to one of its children, who then sees and manages it
 * (a child sees only the instances it holds), or takes it back. Only children granted to manage the
 * instance's category are offered (spec §6: 管理 GPU 实例 for GPU instances).
 */
import { useState } from 'react';
import { Alert, Modal, Select, Typography } from 'antd';
import { useMutation, useQuery } from '@tanstack/react-query';
import { MANAGE_PERMISSIONS, PermissionLabel, type Child, type Instance } from '@console/contract';
import { accountQueries } from '../../account';
import { instancesApi } from '../api/instances';

const MAIN = 'main';

/**
 * The children of the main account, the first 100 (the limit of children an account may have is lower).
 * Silent: the lists only add a line naming a child holder, and the dialog says when there is no child.
 */
export function useChildren(enabled: boolean) {
  return useQuery({
    ...accountQueries.childrenSilent(1, 100),
    enabled,
    staleTime: 60_000,
  });
}

const mayManage = (child: Child, instance: Instance) => (MANAGE_PERMISSIONS[instance.category] ?? []).some((flag) => child.permissions[flag]);

/** What a hand-over means, in one paragraph (one string: JSX would put a space between the sentences). */
const HAND_NOTE =
  '子账号只能看到并管理交给它的实例（以及它自己创建的），实例运行的费用计入该子账号的消费额度；主账号始终可以管理并随时收回。' +
  '每次交出或收回，实例的 ComfyUI API 令牌都会吊销，需要时请在实例详情的「登录信息」中重新生成。';

export function HandModal({ instance, onClose, onSettled }: { instance: Instance; onClose: () => void; onSettled: (answer?: unknown) => void }) {
  const children = useChildren(true);
  const [target, setTarget] = useState<string>(instance.holderId);
  const hand = useMutation({
    mutationFn: (childId: string | null) => instancesApi.hand(instance.id, childId),
    onSettled: (answer) => onSettled(answer),
    onSuccess: onClose,
  });
  const all = children.data?.items ?? [];
  const able = all.filter((c) => !c.disabled && mayManage(c, instance));
  const heldByChild = all.some((c) => c.id === instance.holderId);
  const grants = (MANAGE_PERMISSIONS[instance.category] ?? []).map((f) => `「${PermissionLabel[f]}」`).join('或');
  const value = all.some((c) => c.id === target) ? target : MAIN;
  const submit = () => {
    const childId = value === MAIN ? null : value;
    if ((childId ?? MAIN) === (heldByChild ? instance.holderId : MAIN)) return onClose();
    hand.mutate(childId);
  };
  return (
    <Modal open title="交给子账号管理" okText="确定" cancelText="取消" confirmLoading={hand.isPending} onOk={submit} onCancel={onClose} destroyOnHidden>
      <Typography.Paragraph type="secondary">{HAND_NOTE}</Typography.Paragraph>
      <Select<string>
        style={{ width: '100%' }}
        aria-label="管理该实例的账号"
        loading={children.isLoading}
        value={value}
        onChange={setTarget}
        options={[
          { value: MAIN, label: '主账号（不交给子账号）' },
          ...able.map((c) => ({ value: c.id, label: c.remark ? `${c.childName}（${c.remark}）` : c.childName })),
        ]}
      />
      {children.isSuccess && able.length === 0 && (
        <Alert
          style={{ marginTop: 12 }}
          type="info"
          showIcon
          title={`还没有可以管理这台实例的子账号：请在 账号设置 → 子账号 中为子账号授予${grants || '对应的管理权限'}。`}
        />
      )}
    </Modal>
  );
}
