/**
 * 余额保底 (a main account's setting): when the available balance falls below the floor, the server
 * stops the account's running post-paid instances (its child accounts' too, who spend this balance)
 * at its next billing tick, before the balance is empty; starting one below the floor is refused.
 */
import { useEffect } from 'react';
import { Alert, Button, Card, Flex, Form, InputNumber, Skeleton, Switch, Tag, Typography } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatYuan, yuanToUnits } from '@console/contract';
import { USER_KEYS, userApi, userQueries } from '../../../api/user';
import { LoadError } from '../../../components/LoadError';
import { useMoneyQuery } from '../../../session/useSession';

/** The largest floor, in yuan (the server's limit). */
export const FLOOR_MAX_YUAN = 100000;

interface Values {
  enabled: boolean;
  yuan: number | null;
}

export function BalanceFloorCard() {
  const queryClient = useQueryClient();
  const [form] = Form.useForm<Values>();
  const floor = useQuery(userQueries.balanceFloor());
  const money = useMoneyQuery();
  const save = useMutation({
    mutationFn: (units: string | null) => userApi.setBalanceFloor(units),
    onSuccess: (answer) => queryClient.setQueryData(USER_KEYS.balanceFloor, answer),
  });
  const current = floor.data?.floor ?? null;
  useEffect(() => {
    if (floor.data) form.setFieldsValue({ enabled: current !== null, yuan: current === null ? null : Number(formatYuan(current)) });
  }, [floor.data, current, form]);
  const enabled = Form.useWatch('enabled', form);

  const submit = async () => {
    const v = await form.validateFields();
    save.mutate(v.enabled && v.yuan !== null ? String(yuanToUnits(v.yuan.toFixed(2))) : null);
  };
  const available = money.data ? BigInt(money.data.available ?? money.data.cash) : null;
  const below = current !== null && available !== null && available < BigInt(current);

  return (
    <Card title="余额保底" extra={current === null ? <Tag>未开启</Tag> : <Tag color="purple">已开启：低于 ¥{formatYuan(current)} 自动关机</Tag>}>
      {floor.isError ? (
        <LoadError error={floor.error} onRetry={() => void floor.refetch()} />
      ) : floor.isPending ? (
        <Skeleton active paragraph={{ rows: 2 }} />
      ) : (
        <Flex vertical gap={12}>
          <Typography.Paragraph type="secondary" style={{ margin: 0 }}>
            可用余额（现金 + 赠送金）低于保底金额时，系统会在下一次计费时自动关闭您的按量计费实例（含子账号创建的），避免余额耗尽；低于保底金额时也不能开机。
            关机后数据盘数据保留，超出免费容量的数据盘仍按小时计费。
          </Typography.Paragraph>
          {below && (
            <Alert
              type="warning"
              showIcon
              title={`当前可用余额 ¥${formatYuan(available!)} 低于保底金额 ¥${formatYuan(current!)}：运行中的按量实例将被自动关机，充值或调低保底金额后才能开机。`}
            />
          )}
          <Form form={form} layout="inline" initialValues={{ enabled: false, yuan: null }} onFinish={() => void submit().catch(() => undefined)}>
            <Form.Item name="enabled" label="开启保底" valuePropName="checked">
              <Switch aria-label="开启余额保底" />
            </Form.Item>
            <Form.Item
              name="yuan"
              label="保底金额"
              rules={[
                { required: Boolean(enabled), message: '请填写保底金额' },
                { type: 'number', min: 0, max: FLOOR_MAX_YUAN, message: `保底金额须在 0 到 ${FLOOR_MAX_YUAN} 元之间` },
              ]}
            >
              <InputNumber aria-label="保底金额" disabled={!enabled} min={0} max={FLOOR_MAX_YUAN} precision={2} step={10} prefix="¥" style={{ width: 180 }} />
            </Form.Item>
            <Form.Item>
              <Button type="primary" htmlType="submit" loading={save.isPending}>
                保存
              </Button>
            </Form.Item>
          </Form>
        </Flex>
      )}
    </Card>
  );
}
