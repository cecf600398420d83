/** What a run of the workflow on screen makes and costs, and 运行: one requestId per run, a confirmation, 余额不足 with a way to recharge. */
import { useRef, useState } from 'react';
import { Alert, Descriptions, Flex, Spin, Typography } from 'antd';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { formatYuan, type ComfyGraph, type ComfyQuote, type DiffusionTask } from '@console/contract';
import { reactToError } from '../../../api/client';
import { useRequestAttempt } from '../../../api/requestAttempt';
import { afterRunChanged, COMFY_KEYS, comfyApi, type ComfyRunRequest, comfyQueries } from '../api/comfyui';
import { ApiError, CLIENT_MESSAGES, isApiError } from '../../../api/errors';
import { getApiUi } from '../../../api/ui';
import { cashShortText } from '../../../components/CashShortAlert';
import { formatUnitPrice, Price } from '../../../components/Price';
import { useDebouncedValue } from '../../../hooks/useDebouncedValue';
import { formatDuration } from '../../training';

/** Typing a number sends one quote when the typing stops, not one per key. */
export const COMFY_QUOTE_DEBOUNCE_MS = 400;

/** The server's quote for `graph` once it stopped changing; `settling` while what is shown is not yet its price. */
export function useComfyQuote(graph: ComfyGraph | null) {
  const settled = useDebouncedValue(graph, COMFY_QUOTE_DEBOUNCE_MS);
  const query = useQuery({
    ...comfyQueries.quote(settled),
    enabled: settled !== null,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
  const settling = JSON.stringify(settled) !== JSON.stringify(graph) || query.isPlaceholderData || query.isFetching;
  return { query, settling };
}

/** The dialog's sentence: 「将从现金预扣 ¥x（生成 n 张，每张 ¥y；时长包抵扣 k 张）」. */
export function holdText(q: ComfyQuote): string {
  const pkg = q.packageImages > 0 ? `；时长包抵扣 ${q.packageImages} 张` : '';
  return `将从现金预扣 ¥${formatYuan(q.total)}（生成 ${q.images} 张，每张 ¥${formatUnitPrice(q.perImage)}${pkg}）`;
}

function QuoteView({ quote }: { quote: ComfyQuote }) {
  return (
    <Flex vertical gap={8}>
      <Descriptions column={{ xs: 1, sm: 2 }} size="small">
        <Descriptions.Item label="输出图片">
          <span data-testid="quote-images">{quote.images} 张</span>
        </Descriptions.Item>
        <Descriptions.Item label="预计 GPU 时长">
          <span data-testid="quote-seconds">{quote.seconds < 60 ? `${quote.seconds} 秒` : formatDuration(quote.seconds)}</span>
        </Descriptions.Item>
        <Descriptions.Item label="每张">
          <span data-testid="quote-per-image">¥{formatUnitPrice(quote.perImage)}</span>
        </Descriptions.Item>
        <Descriptions.Item label="计费">
          {quote.gpuName} · <Price units={quote.ratePerHour} per="时" size="sm" />
        </Descriptions.Item>
        {quote.packageImages > 0 && (
          <Descriptions.Item label="时长包抵扣">
            <Typography.Text type="success" data-testid="quote-package">
              {quote.packageImages >= quote.images ? `全部 ${quote.images} 张` : `${quote.packageImages} 张`}
            </Typography.Text>
          </Descriptions.Item>
        )}
      </Descriptions>
      <Flex align="baseline" gap={8} wrap>
        <span>现金预扣</span>
        <span data-testid="quote-total">
          <Price units={quote.total} size="lg" />
        </span>
      </Flex>
    </Flex>
  );
}

/** Where the price would be: why there is none yet, the price, or why asking for it failed. */
export function QuotePanel({ quote, settling, blocked }: { quote: ReturnType<typeof useComfyQuote>['query']; settling: boolean; blocked: string | null }) {
  if (blocked) return <Typography.Text type="secondary">{blocked}</Typography.Text>;
  if (quote.isError && !settling) {
    // The server's own check (40050009) says which node and why in the detail.
    const e = quote.error;
    return <Alert type="error" showIcon title={`询价失败：${isApiError(e) && e.detail ? `${e.message}：${e.detail}` : e.message}`} />;
  }
  if (!quote.data) return <Spin size="small" description="正在计算费用…" />;
  return (
    <Spin spinning={settling} size="small">
      <QuoteView quote={quote.data} />
    </Spin>
  );
}

/**
 * Runs a saved workflow. Each run has its own requestId; a retry of the same saved version after a
 * network error or a 5xx keeps it (the run may exist: the server returns it instead of starting
 * another), a refusal or a success starts the next one afresh. A second click while one is on its
 * way sends nothing.
 */
export function useRunWorkflow(onStarted: (task: DiffusionTask) => void) {
  const queryClient = useQueryClient();
  const attempt = useRequestAttempt();
  const inFlight = useRef(false);
  const [cashError, setCashError] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: (body: ComfyRunRequest) => comfyApi.run(body),
    onMutate: () => setCashError(null),
    onSuccess: (task) => {
      attempt.succeeded();
      afterRunChanged(queryClient);
      onStarted(task);
    },
    onError: (e) => {
      const error = isApiError(e) ? e : new ApiError('network', CLIENT_MESSAGES.network);
      attempt.failed(error);
      if (isApiError(error, 'COMFY_WORKFLOW_NOT_FOUND')) void queryClient.invalidateQueries({ queryKey: COMFY_KEYS.workflows });
      if (isApiError(error, 'DIFFUSION_INSUFFICIENT_CASH')) setCashError(cashShortText(error));
      else reactToError(error, getApiUi());
    },
    onSettled: () => {
      inFlight.current = false;
    },
  });
  /** The requestId of a run of this saved version: a new one unless the last try of the same version may have started it. */
  const requestIdFor = (version: string) => attempt.idFor(version);
  const run = (workflowId: string, requestId: string): Promise<void> => {
    if (inFlight.current) return Promise.resolve();
    inFlight.current = true;
    return mutation.mutateAsync({ workflowId, requestId }).then(
      () => undefined,
      () => undefined,
    );
  };
  return { requestIdFor, run, pending: mutation.isPending, cashError, clearCashError: () => setCashError(null) };
}
