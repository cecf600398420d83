/**
 * 自动续费: the switch of a prepaid instance. With it on, the server renews one unit of the cycle from
 * the balance (gift credit first, then cash) shortly before expiry; when the balance cannot pay
 * nothing is charged, the owner gets a notice and the instance expires as usual.
 */
import { useState } from 'react';
import { Alert, Descriptions, Flex, Modal, Switch, Typography } from 'antd';
import { useMutation } from '@tanstack/react-query';
import { BillingCycleUnit, type Instance } from '@console/contract';
import { instancesApi } from '../api/instances';
import { prepaidTermItems } from './instanceViews';

export function AutoRenewModal({ instance: i, onClose, onSettled }: { instance: Instance; onClose: () => void; onSettled: (answer?: unknown) => void }) {
  const [on, setOn] = useState(i.autoRenew);
  const unit = BillingCycleUnit[i.cycle];
  const save = useMutation({
    mutationFn: () => instancesApi.setAutoRenew(i.id, on),
    onSettled: (answer) => onSettled(answer),
    onSuccess: onClose,
  });
  return (
    <Modal
      open
      title={`自动续费「${i.name}」`}
      okText="保存"
      cancelText="取消"
      okButtonProps={{ disabled: on === i.autoRenew }}
      confirmLoading={save.isPending}
      onOk={() => save.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={520}
    >
      <Flex vertical gap={16}>
        <Descriptions column={1} size="small" items={prepaidTermItems(i)} />
        <Flex align="center" gap={12}>
          <Switch aria-label="自动续费" checked={on} onChange={setOn} />
          <Typography.Text>{on ? '已开启' : '未开启'}</Typography.Text>
        </Flex>
        <Alert
          type="info"
          showIcon
          title={`开启后，到期前（默认提前 24 小时，包日实例提前 12 小时）自动从余额续费 1 ${unit}，价格与手动续费相同，先扣赠送金再扣现金。`}
          description="余额不足时不会扣款，我们会短信提醒您；实例将按时到期关机，可在释放前手动续费。"
        />
      </Flex>
    </Modal>
  );
}
