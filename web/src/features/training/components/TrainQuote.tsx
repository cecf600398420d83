/** The price of the job on screen before it starts, and the dialog that starts it. */
import { useState } from 'react';
import { Alert, Descriptions, Flex, Modal, Spin, Typography } from 'antd';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatYuan, loraEpochCharge, type LoraJob, type LoraQuote } from '@console/contract';
import { getApiUi } from '../../../api/ui';
import { reactToError } from '../../../api/client';
import { refusedByServer } from '../../../api/requestAttempt';
import { ApiError, CLIENT_MESSAGES, isApiError } from '../../../api/errors';
import { BILLING_KEYS } from '../../../api/billing';
import { TRAIN_KEYS, trainApi, type LoraJobStart, type LoraQuoteRequest, trainQueries } from '../api/training';
import { CashShortAlert, cashShortText } from '../../../components/CashShortAlert';
import { Price } from '../../../components/Price';
import { useMoneyQuery } from '../../../session/useSession';
import { useDebouncedValue } from '../../../hooks/useDebouncedValue';
import { baseModelName, formatEstimate } from './trainViews';

/** Typing a number sends one quote when the typing stops, not one per key. */
export const TRAIN_QUOTE_DEBOUNCE_MS = 400;

/** The server's quote for `request` once it stopped changing; `settling` while what is shown is not yet its price. */
export function useTrainQuote(request: LoraQuoteRequest | null) {
  const settled = useDebouncedValue(request, TRAIN_QUOTE_DEBOUNCE_MS);
  const query = useQuery({
    ...trainQueries.quote(settled),
    enabled: settled !== null,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
  const settling = JSON.stringify(settled) !== JSON.stringify(request) || query.isPlaceholderData || query.isFetching;
  return { query, settling };
}

/** The quote as the form shows it: steps, GPU time, the price and what it is made of. */
export function QuoteView({ quote }: { quote: LoraQuote }) {
  const epochs = quote.steps.perEpoch > 0 ? Math.round(quote.steps.total / quote.steps.perEpoch) : 0;
  return (
    <Flex vertical gap={8}>
      <Descriptions column={1} size="small">
        <Descriptions.Item label="训练图片">{quote.images} 张</Descriptions.Item>
        <Descriptions.Item label="步数">
          <span data-testid="quote-steps">
            每轮 {quote.steps.perEpoch} 步 · 共 {quote.steps.total} 步（{epochs} 轮）
          </span>
        </Descriptions.Item>
        <Descriptions.Item label="预计 GPU 时长">{formatEstimate(quote.seconds)}</Descriptions.Item>
        <Descriptions.Item label="计费">
          {quote.gpuName} · <Price units={quote.ratePerHour} per="时" size="sm" />
        </Descriptions.Item>
        {quote.packageSeconds > 0 && (
          <Descriptions.Item label="时长包抵扣">
            <span data-testid="quote-package">
              {formatEstimate(quote.packageSeconds)}（原价 ¥{formatYuan(quote.listAmount)}）
            </span>
          </Descriptions.Item>
        )}
      </Descriptions>
      <Flex align="baseline" gap={8}>
        <span>预计费用</span>
        <span data-testid="quote-amount">
          <Price units={quote.amount} size="lg" />
        </span>
      </Flex>
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        按 GPU 时长计费，最低 ¥{formatYuan(quote.minimum)}；RTX 4090 时长包先抵扣，其余开始时从现金余额预扣，按完成的轮次结算，未用完的退回。
      </Typography.Text>
    </Flex>
  );
}

/** The right-hand panel: why there is no price yet, the price, or why asking for it failed. */
export function QuotePanel({
  quote,
  settling,
  blocked,
}: {
  quote: ReturnType<typeof useTrainQuote>['query'];
  settling: boolean;
  /** Why no quote is asked for (no dataset, no images, a parameter out of range). */
  blocked: string | null;
}) {
  if (blocked) return <Typography.Text type="secondary">{blocked}</Typography.Text>;
  if (quote.isError && !settling) return <Alert type="error" showIcon title={`询价失败：${quote.error.message}`} />;
  if (!quote.data) return <Spin description="正在计算费用…" />;
  return (
    <Spin spinning={settling} description="正在重新计算…">
      <QuoteView quote={quote.data} />
    </Spin>
  );
}

/** What the dialog starts: the request as confirmed and its price at that moment. */
export interface PendingStart {
  body: LoraJobStart;
  quote: LoraQuote;
  datasetName: string;
}

/** A fresh start of what is on screen: one requestId per opened dialog, so a double click starts one job. */
export const pendingStart = (request: LoraQuoteRequest, name: string, quote: LoraQuote, datasetName: string): PendingStart => ({
  body: { ...request, name: name.trim(), requestId: crypto.randomUUID() },
  quote,
  datasetName,
});

function useStartJob(pending: PendingStart | null, onStarted: (job: LoraJob) => void, onRenew: () => void) {
  const queryClient = useQueryClient();
  const [cashError, setCashError] = useState<string | null>(null);
  const start = useMutation({
    mutationFn: (body: LoraJobStart) => trainApi.start(body),
    onMutate: () => setCashError(null),
    onSuccess: (job) => {
      queryClient.setQueryData(TRAIN_KEYS.one(job.id), job);
      void queryClient.invalidateQueries({ queryKey: TRAIN_KEYS.lists });
      void queryClient.invalidateQueries({ queryKey: BILLING_KEYS.money });
      onStarted(job);
    },
    onError: (e) => {
      const error = isApiError(e) ? e : new ApiError('network', CLIENT_MESSAGES.network);
      // A timeout may have started the job: the same requestId on retry finds it instead of starting another.
      if (refusedByServer(error)) onRenew();
      if (isApiError(error, 'TRAIN_INSUFFICIENT_CASH')) setCashError(cashShortText(error));
      else reactToError(error, getApiUi());
    },
  });
  return { start, cashError, run: () => pending && start.mutate(pending.body), reset: () => setCashError(null) };
}

/** 开始训练's confirmation: what is held from the cash now and how it is settled. */
export function StartModal({
  pending,
  onClose,
  onStarted,
  onRenew,
}: {
  pending: PendingStart | null;
  onClose: () => void;
  onStarted: (job: LoraJob) => void;
  /** The server refused the start: the next try needs a new requestId. */
  onRenew: () => void;
}) {
  const money = useMoneyQuery();
  const { start, cashError, run, reset } = useStartJob(pending, onStarted, onRenew);
  const close = () => {
    reset();
    onClose();
  };
  const amount = pending?.quote.amount ?? '0';
  const epochs = pending?.body.params.epochs ?? 1;
  return (
    <Modal
      title="确认开始训练"
      open={pending !== null}
      onCancel={close}
      onOk={run}
      okText="确认开始"
      cancelText="取消"
      confirmLoading={start.isPending}
      destroyOnHidden
    >
      {pending && (
        <Flex vertical gap={12}>
          <Descriptions column={1} size="small" bordered>
            <Descriptions.Item label="模型名称">{pending.body.name}</Descriptions.Item>
            <Descriptions.Item label="数据集">{pending.datasetName}</Descriptions.Item>
            <Descriptions.Item label="底模">{baseModelName(pending.body.baseModel)}</Descriptions.Item>
            <Descriptions.Item label="训练量">
              {epochs} 轮 · 共 {pending.quote.steps.total} 步 · {formatEstimate(pending.quote.seconds)}
            </Descriptions.Item>
            {pending.quote.packageSeconds > 0 && (
              <Descriptions.Item label="时长包抵扣">{formatEstimate(pending.quote.packageSeconds)} GPU 时长</Descriptions.Item>
            )}
            <Descriptions.Item label="预扣金额">
              <span data-testid="start-amount">
                <Price units={amount} size="md" />
              </span>
              {money.data && <Typography.Text type="secondary">（当前现金余额 ¥{formatYuan(money.data.cash)}）</Typography.Text>}
            </Descriptions.Item>
          </Descriptions>
          <Typography.Paragraph style={{ margin: 0 }} data-testid="start-terms">
            开始后将从现金余额预扣 ¥{formatYuan(amount)}（赠送金不能用于训练）。每完成一轮结算该轮的份额（约 ¥
            {formatYuan(loraEpochCharge(BigInt(amount), epochs, 1))}）；中途取消时已完成轮次照常结算，其余退回；训练失败全部退回。
          </Typography.Paragraph>
          {cashError && <CashShortAlert message={cashError} />}
        </Flex>
      )}
    </Modal>
  );
}
