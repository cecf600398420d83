/** The price of what the form would make, and 生成: one requestId per submit, a confirmation from ¥1 up, 余额不足 with a way to recharge. */
import { useRef, useState } from 'react';
import { Alert, App, Button, Flex, Spin, Typography } from 'antd';
import { ThunderboltOutlined } from '@ant-design/icons';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { DIFFUSION_MAX_ACTIVE, formatYuan, type DiffusionParams, type DiffusionQuote, type DiffusionQuoteRequest, type DiffusionTask } from '@console/contract';
import { reactToError } from '../../../api/client';
import { useRequestAttempt } from '../../../api/requestAttempt';
import { DIFFUSION_KEYS, diffusionApi, storeSubmittedTask, type DiffusionSubmit, diffusionQueries } from '../api/diffusion';
import { ApiError, CLIENT_MESSAGES, isApiError } from '../../../api/errors';
import { getApiUi } from '../../../api/ui';
import { CashShortAlert, cashShortText } from '../../../components/CashShortAlert';
import { formatUnitPrice, Price } from '../../../components/Price';
import { useMoneyQuery } from '../../../session/useSession';
import { useDebouncedValue } from '../../../hooks/useDebouncedValue';
import type { DraftErrors } from '../utils/diffusionDraft';
import { Note } from './diffusionViews';
import { formatDuration } from '../../training';

/** Typing a number sends one quote when the typing stops, not one per key. */
export const DIFFUSION_QUOTE_DEBOUNCE_MS = 400;
/** From this total (¥1, in 0.0001 yuan) 生成 asks first; below it the held amount on the quote line is confirmation enough. */
export const CONFIRM_FROM_UNITS = 10_000n;

/** The server's quote for the priced fields once they stopped changing; `settling` while what is shown is not yet their price. */
export function useDiffusionQuote(priced: DiffusionQuoteRequest | null) {
  const settled = useDebouncedValue(priced, DIFFUSION_QUOTE_DEBOUNCE_MS);
  const query = useQuery({
    ...diffusionQueries.quote(settled),
    enabled: settled !== null,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
  const settling = JSON.stringify(settled) !== JSON.stringify(priced) || query.isPlaceholderData || query.isFetching;
  return { query, settling };
}

/** Why no price is asked for yet, in the words of what to do next (the prompt does not change the price). */
export function quoteBlocker(errors: DraftErrors): string | null {
  const priced = Object.entries(errors).find(([k]) => ['baseModel', 'width', 'height', 'steps', 'batchCount'].includes(k));
  return priced ? `参数有误，修正后显示费用：${priced[1]}` : null;
}

/** What the 时长包 pays of a quote, in a sentence; empty when it pays nothing. */
export function packageText(packageImages: number, count: number): string {
  if (packageImages <= 0) return '';
  return packageImages >= count
    ? `全部 ${count} 张由 RTX 4090 时长包支付`
    : `其中 ${packageImages} 张由 RTX 4090 时长包支付，现金只预扣其余 ${count - packageImages} 张`;
}

function QuoteView({ quote, count }: { quote: DiffusionQuote; count: number }) {
  return (
    <Flex vertical gap={4}>
      <Flex align="baseline" justify="space-between" gap={8} wrap>
        <span>
          共 {count} 张，现金预扣{' '}
          <span data-testid="quote-total">
            <Price units={quote.total} size="lg" />
          </span>
        </span>
        <span data-testid="quote-per-image">每张 ¥{formatUnitPrice(quote.perImage)}</span>
      </Flex>
      {quote.packageImages > 0 && (
        <Typography.Text type="success" style={{ fontSize: 12 }} data-testid="quote-package">
          {packageText(quote.packageImages, count)}
        </Typography.Text>
      )}
      <Note>
        <span data-testid="quote-seconds">
          预计每张 {quote.seconds} 秒，共约 {formatDuration(quote.seconds * count)}（不含排队）
        </span>
        {' · '}
        {quote.gpuName} <Price units={quote.ratePerHour} per="时" size="sm" />
      </Note>
    </Flex>
  );
}

/** Where the price would be: why there is none yet, the price, or why asking for it failed. */
function QuotePanel({
  quote,
  settling,
  blocked,
  count,
}: {
  quote: ReturnType<typeof useDiffusionQuote>['query'];
  settling: boolean;
  blocked: string | null;
  count: number;
}) {
  if (blocked) return <Typography.Text type="secondary">{blocked}</Typography.Text>;
  if (quote.isError && !settling) return <Alert type="error" showIcon title={`询价失败：${quote.error.message}`} />;
  if (!quote.data) return <Spin size="small" description="正在计算费用…" />;
  return (
    <Spin spinning={settling} size="small">
      <QuoteView quote={quote.data} count={count} />
    </Spin>
  );
}

/**
 * Submits a task. Each submit has its own requestId; a retry of the same parameters after a network
 * error or a 5xx keeps it (the task may exist: the server returns it instead of making another), a
 * refusal or a success starts the next one afresh. A second click while one is on its way sends nothing.
 */
export function useSubmitTask(onSubmitted: (task: DiffusionTask) => void) {
  const queryClient = useQueryClient();
  const attempt = useRequestAttempt();
  const inFlight = useRef(false);
  const [cashError, setCashError] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: (body: DiffusionSubmit) => diffusionApi.submit(body),
    onMutate: () => setCashError(null),
    onSuccess: (task) => {
      attempt.succeeded();
      storeSubmittedTask(queryClient, task);
      onSubmitted(task);
    },
    onError: (e) => {
      const error = isApiError(e) ? e : new ApiError('network', CLIENT_MESSAGES.network);
      attempt.failed(error);
      if (isApiError(error, 'DIFFUSION_LORA_NOT_FOUND', 'DIFFUSION_LORA_MISMATCH')) void queryClient.invalidateQueries({ queryKey: DIFFUSION_KEYS.loras });
      if (isApiError(error, 'DIFFUSION_INSUFFICIENT_CASH')) setCashError(cashShortText(error));
      else reactToError(error, getApiUi());
    },
    onSettled: () => {
      inFlight.current = false;
    },
  });
  const submit = (params: DiffusionParams): Promise<void> => {
    if (inFlight.current) return Promise.resolve();
    const requestId = attempt.idFor(JSON.stringify(params));
    inFlight.current = true;
    return mutation.mutateAsync({ ...params, requestId }).then(
      () => undefined,
      () => undefined,
    );
  };
  return { submit, pending: mutation.isPending, cashError };
}

/** The foot of the form: the price, 生成, and what is held and returned. */
export function SubmitPanel({
  params,
  priced,
  errors,
  onSubmitted,
}: {
  params: DiffusionParams | null;
  priced: DiffusionQuoteRequest | null;
  errors: DraftErrors;
  onSubmitted: (task: DiffusionTask) => void;
}) {
  const { modal } = App.useApp();
  const money = useMoneyQuery();
  const { query: quote, settling } = useDiffusionQuote(priced);
  const { submit, pending, cashError } = useSubmitTask(onSubmitted);
  const blocked = quoteBlocker(errors);
  const ready = !!params && !!quote.data && !quote.isError && !settling;
  // A double click opens one confirmation, not two.
  const confirming = useRef(false);

  const go = () => {
    if (!params || !quote.data || !ready || confirming.current) return;
    const q = quote.data;
    if (BigInt(q.total) < CONFIRM_FROM_UNITS) return void submit(params);
    confirming.current = true;
    const packages = packageText(q.packageImages, params.batchCount);
    modal.confirm({
      title: '确认生成',
      content: `将生成 ${params.batchCount} 张图片，从现金余额预扣 ¥${formatYuan(q.total)}（每张 ¥${formatUnitPrice(q.perImage)}${packages ? `；${packages}` : ''}）。每生成一张结算一张；取消时已生成的照常结算，其余退回；生成失败退回未生成部分。`,
      okText: '确认生成',
      cancelText: '取消',
      onOk: () => submit(params),
      afterClose: () => {
        confirming.current = false;
      },
    });
  };

  return (
    <Flex vertical gap={12} data-testid="quote-panel">
      <QuotePanel quote={quote} settling={settling} blocked={blocked} count={params?.batchCount ?? 0} />
      <Button type="primary" size="large" block icon={<ThunderboltOutlined />} disabled={!ready} loading={pending} onClick={go}>
        生成
      </Button>
      {cashError && <CashShortAlert message={cashError} />}
      <Note>
        按张计费：RTX 4090 时长包先抵扣整张，其余提交时从现金余额预扣（赠送金不能用于生成）
        {money.data && `，当前现金余额 ¥${formatYuan(money.data.cash)}`}；每生成一张结算一张，取消或失败时未生成部分退回。同时进行的任务最多{' '}
        {DIFFUSION_MAX_ACTIVE} 个。
      </Note>
    </Flex>
  );
}
