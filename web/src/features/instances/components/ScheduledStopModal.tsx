/**
 * 定时关机: the instance is stopped by the system at a chosen time, or after a number of hours. One
 * schedule per instance (a new one replaces it); stopping or releasing it before then cancels it.
 */
import { useState } from 'react';
import { Alert, Button, DatePicker, Flex, Form, InputNumber, Modal, Radio, Typography } from 'antd';
import { useMutation } from '@tanstack/react-query';
import type { Dayjs } from 'dayjs';
import { SCHEDULED_STOP_MAX_HOURS, SCHEDULED_STOP_MIN_HOURS, isPostpaid, type Instance, type ScheduledStopRequest } from '@console/contract';
import { instancesApi } from '../api/instances';
import { scheduledStopText } from './instanceViews';
import { beijingWallClock, instantOfBeijingWallClock } from '../../../lib/time';

type Mode = 'hours' | 'at';
interface Values {
  hours?: number | null;
  at?: Dayjs | null;
}

const HOUR_MS = 3_600_000;
/** Minutes: what the dialog shows and sends (the server takes any future time). */
const AT_FORMAT = 'YYYY-MM-DD HH:mm';

export function ScheduledStopModal({
  instance: i,
  onClose,
  onSettled,
  onCancelSchedule,
}: {
  instance: Instance;
  onClose: () => void;
  onSettled: (answer?: unknown) => void;
  /** Cancels the pending schedule (asks first). */
  onCancelSchedule: () => void;
}) {
  const [form] = Form.useForm<Values>();
  const [mode, setMode] = useState<Mode>('hours');
  const hours = Form.useWatch('hours', form);
  const at = Form.useWatch('at', form);
  const save = useMutation({
    mutationFn: (body: ScheduledStopRequest) => instancesApi.scheduleStop(i.id, body),
    onSettled: (answer) => onSettled(answer),
    onSuccess: onClose,
  });
  const submit = async () => {
    const v = await form.validateFields();
    save.mutate(mode === 'hours' ? { hours: v.hours! } : { at: instantOfBeijingWallClock(v.at!.second(0).millisecond(0)).toISOString() });
  };
  // The picker shows and takes Beijing time (lib/time), as every time on the console is.
  const now = () => beijingWallClock();
  const when =
    mode === 'hours'
      ? typeof hours === 'number'
        ? new Date(Date.now() + hours * HOUR_MS)
        : null
      : at && at.isAfter(now())
        ? instantOfBeijingWallClock(at.second(0).millisecond(0))
        : null;
  const latest = () => now().add(SCHEDULED_STOP_MAX_HOURS, 'hour');

  return (
    <Modal
      open
      title={`定时关机「${i.name}」`}
      okText={i.scheduledStopAt ? '修改定时关机' : '设置定时关机'}
      cancelText="取消"
      confirmLoading={save.isPending}
      onOk={() => void submit().catch(() => undefined)}
      onCancel={onClose}
      destroyOnHidden
      width={520}
    >
      <Flex vertical gap={16}>
        {i.scheduledStopAt && (
          <Alert
            type="info"
            showIcon
            title={`已设置：${scheduledStopText(i.scheduledStopAt)}`}
            description="重新设置会替换当前的定时关机。"
            action={
              <Button size="small" onClick={onCancelSchedule}>
                取消定时关机
              </Button>
            }
          />
        )}
        <Radio.Group aria-label="定时方式" value={mode} onChange={(e) => setMode(e.target.value as Mode)} optionType="button">
          <Radio value="hours">多少小时后关机</Radio>
          <Radio value="at">指定关机时间</Radio>
        </Radio.Group>
        <Form form={form} layout="vertical" initialValues={{ hours: 2 }} onFinish={() => void submit().catch(() => undefined)}>
          {mode === 'hours' ? (
            <Form.Item
              name="hours"
              label="小时数"
              extra={`${SCHEDULED_STOP_MIN_HOURS}–${SCHEDULED_STOP_MAX_HOURS} 小时，可填半小时（如 1.5）`}
              rules={[
                { required: true, message: '请填写多少小时后关机' },
                {
                  type: 'number',
                  min: SCHEDULED_STOP_MIN_HOURS,
                  max: SCHEDULED_STOP_MAX_HOURS,
                  message: `请填写 ${SCHEDULED_STOP_MIN_HOURS} 到 ${SCHEDULED_STOP_MAX_HOURS} 之间的小时数`,
                },
              ]}
            >
              <InputNumber
                aria-label="小时数"
                min={SCHEDULED_STOP_MIN_HOURS}
                max={SCHEDULED_STOP_MAX_HOURS}
                step={0.5}
                precision={1}
                suffix="小时"
                style={{ width: 200 }}
              />
            </Form.Item>
          ) : (
            <Form.Item
              name="at"
              label="关机时间"
              extra={`最晚 ${SCHEDULED_STOP_MAX_HOURS / 24} 天后`}
              rules={[
                { required: true, message: '请选择关机时间' },
                {
                  validator: (_, v: Dayjs | null | undefined) =>
                    !v || (v.isAfter(now()) && !v.isAfter(latest()))
                      ? Promise.resolve()
                      : Promise.reject(new Error(`请选择现在之后、${SCHEDULED_STOP_MAX_HOURS / 24} 天以内的时间`)),
                },
              ]}
            >
              <DatePicker
                aria-label="关机时间"
                showTime={{ format: 'HH:mm' }}
                format={AT_FORMAT}
                disabledDate={(d) => d.isBefore(now(), 'day') || d.isAfter(latest(), 'day')}
                style={{ width: 240 }}
              />
            </Form.Item>
          )}
        </Form>
        <Typography.Text type={when ? undefined : 'secondary'} data-testid="scheduled-stop-preview">
          {when ? `${scheduledStopText(when.toISOString())}（到时由系统关机）` : '选择后将显示关机时间'}
        </Typography.Text>
        <Alert
          type="warning"
          showIcon
          title="到时实例将被关机，正在运行的程序会被中断，请提前保存数据。"
          description={
            isPostpaid(i.cycle)
              ? `关机后停止${i.gpuCount === 0 ? '实例' : ' GPU '}计费，超出免费容量的数据盘仍按小时计费。您提前关机或释放实例时，定时关机自动取消。`
              : '包周期实例关机不退还费用，到期时间不变。您提前关机或释放实例时，定时关机自动取消。'
          }
        />
      </Flex>
    </Modal>
  );
}
