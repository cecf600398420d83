/**
 * 调整带宽 (e-commerce machines): the new bandwidth from the operator's steps, quoted live. A prepaid
 * upgrade pays the added Mbps for the hours left as a TrafficUpgrade order in the pay dialog; a
 * prepaid downgrade starts at once and shows what will come back; any change of a post-paid machine
 * starts at once with nothing to pay (the rule under the total says what happens to the money).
 */
import { useState } from 'react';
import { Alert, Radio, Space, Typography } from 'antd';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { BillingCycle, formatYuan, isPostpaid, type Instance } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { INSTANCE_KEYS, instancesApi, instanceQueries } from '../api/instances';
import { formatTime } from '../../../components/orderViews';
import { BILLING_KEYS } from '../../../api/billing';
import { taskBlocked } from './instanceViews';
import { QuoteOrderModal } from './QuoteOrderModal';

/** The first choice offered: the next step up, or the one below when the machine is at the top. */
function initialChoice(i: Instance): number {
  const up = i.bandwidthChoices.find((c) => c > i.bandwidthMbps);
  return up ?? [...i.bandwidthChoices].reverse().find((c) => c < i.bandwidthMbps) ?? i.bandwidthMbps;
}

export function BandwidthModal({ instance: i, onClose }: { instance: Instance; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [mbps, setMbps] = useState(() => initialChoice(i));
  const prepaid = !isPostpaid(i.cycle);
  const blocked = taskBlocked(i, 'changeBandwidth');

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.all });
    void queryClient.invalidateQueries({ queryKey: INSTANCE_KEYS.logsAll });
    void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
  };

  const quote = useQuery({
    ...instanceQueries.bandwidthPrice(i.id, mbps),
    placeholderData: keepPreviousData,
    retry: false,
    enabled: mbps !== i.bandwidthMbps,
  });

  const upgrade = mbps > i.bandwidthMbps;
  return (
    <QuoteOrderModal
      title={`调整带宽「${i.name}」`}
      okText={prepaid && upgrade ? '提交订单' : '确认调整'}
      okDisabled={blocked !== null}
      notice={blocked && <Alert type="warning" showIcon title={blocked} description="带宽可在实例运行中或关机后调整。" />}
      details={[
        { key: 'current', label: '当前带宽', children: `${i.bandwidthMbps} Mbps（规格自带 ${i.includedBandwidthMbps} Mbps）` },
        { key: 'billing', label: '计费方式', children: prepaid ? `${BillingCycle.label(i.cycle)}，到期 ${formatTime(i.expireAt)}` : '按量计费' },
      ]}
      quote={quote}
      // A prepaid downgrade pays nothing and gets money back: its total is the refund.
      priced={(q) => (q.prepaid && q.type === 'TrafficDowngrade' ? { lines: [], total: q.refund } : q.quote)}
      errorText={(e) => `询价失败：${isApiError(e) && e.detail ? e.detail : e.message}`}
      totalLabel={(q) => (!q.prepaid ? '现在支付' : q.type === 'TrafficUpgrade' ? '应付金额' : '预计退还')}
      totalTestId="bandwidth-total"
      footer={(q) => (
        <Space direction="vertical" size={4}>
          {!q.prepaid && (
            <Typography.Text data-testid="bandwidth-hourly">
              调整后每小时 ¥{formatYuan(q.hourlyPriceAfter)}（超出规格自带部分每 Mbps 每小时 ¥{formatYuan(q.pricePerMbpsHour)}）
            </Typography.Text>
          )}
          {q.prepaid && q.type === 'TrafficUpgrade' && <Typography.Text type="secondary">按剩余 {q.remainingHours} 小时折算，支付后生效。</Typography.Text>}
          <Alert type="info" showIcon title={q.rule} />
        </Space>
      )}
      create={() => instancesApi.changeBandwidth(i.id, mbps).then((r) => r.order)}
      paidText={`带宽升级订单已支付，正在调整为 ${mbps} Mbps`}
      doneText={`正在调整带宽为 ${mbps} Mbps，几秒后生效`}
      unpaidText="带宽升级订单尚未支付，可在账单页继续支付"
      onChange={refresh}
      onClose={onClose}
    >
      <Space direction="vertical" size={8}>
        <Typography.Text>调整为</Typography.Text>
        <Radio.Group
          aria-label="新带宽"
          optionType="button"
          value={mbps}
          onChange={(e) => setMbps(e.target.value as number)}
          options={i.bandwidthChoices.map((c) => ({ value: c, label: `${c} Mbps`, disabled: c === i.bandwidthMbps }))}
        />
        <Typography.Text type="secondary">
          {upgrade ? '升级' : '降级'}：{i.bandwidthMbps} Mbps → {mbps} Mbps
        </Typography.Text>
      </Space>
    </QuoteOrderModal>
  );
}
