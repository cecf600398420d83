/**
 * The frame of every "change this instance for a price" dialog (续费, 日转月, 转长期租用, 数据盘扩容…):
 * what the instance is now, the caller's controls, the server's live quote for them (lines, total,
 * whatever else the caller reads from it), then one create call. When that call answers an order it
 * is handed to the pay dialog; when it answers nothing to pay the change is done at once.
 */
import { useRef, useState, type ReactNode } from 'react';
import { Alert, App, Descriptions, Flex, Modal, Skeleton, Typography, type DescriptionsProps } from 'antd';
import { useMutation, useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import type { Order, OrderStatus, Quote } from '@console/contract';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { invalidateOrderViews } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { QuoteLines } from '../../../components/QuoteLines';

/** What the dialog lists of a quote: its lines and what they add up to. */
export type PricedLines = Pick<Quote, 'lines' | 'total'>;

interface QuoteOrderModalBase<Q> {
  /** The dialog title, e.g. 续费实例「name」. */
  title: ReactNode;
  okText: string;
  /** 520 unless given. */
  width?: number;
  /** Shown above the details (e.g. why the change cannot be made now). */
  notice?: ReactNode;
  /** What the instance is now (antd Descriptions items, one column). */
  details: DescriptionsProps['items'];
  /** The controls the quote depends on (duration, cycle, size…). */
  children?: ReactNode;
  /** The live quote for the controls' values (keepPreviousData, retry: false). */
  quote: UseQueryResult<Q>;
  /** The failed quote's message; `询价失败：<message>` unless given. */
  errorText?: (error: Error) => string;
  /** The total's label (also its aria-label), e.g. 应付金额. */
  totalLabel: string | ((q: Q) => string);
  /** The total's data-testid, e.g. renew-total. */
  totalTestId: string;
  /** Lines under the total: the new expiry, a note, the rule… */
  footer?: (q: Q) => ReactNode;
  /** Keeps the OK button disabled whatever the quote (e.g. the instance must be stopped first). */
  okDisabled?: boolean;
  /** Creates the change: the order to pay, or null when there is nothing to pay (it is done). */
  create: () => Promise<Order | null>;
  /** Said once the order is paid and delivered. */
  paidText: string;
  /** Said when create answered nothing to pay; paidText unless given. */
  doneText?: string;
  /** Said when the pay dialog is closed with the order still unpaid. */
  unpaidText: string;
  /** Server state may have moved: create answered, or the order's payment ended one way or another. */
  onChange?: () => void;
  /** The change went through: the order is paid, or there was nothing to pay. Called before onClose. */
  onDone?: () => void;
  onClose: () => void;
}

/** A quote that is itself lines and a total needs no `priced`; any other says where they are. */
export type QuoteOrderModalProps<Q> = QuoteOrderModalBase<Q> & (Q extends PricedLines ? { priced?: (q: Q) => PricedLines } : { priced: (q: Q) => PricedLines });

/** The total of a quote (or refund): label left, amount right, with its aria-label and test id. */
export function QuoteTotal({ label, units, testId, strong = false }: { label: string; units: string; testId: string; strong?: boolean }) {
  return (
    <Flex justify="space-between" align="baseline">
      <Typography.Text strong={strong}>{label}</Typography.Text>
      <span aria-label={label} data-testid={testId}>
        <Price units={units} size="lg" />
      </span>
    </Flex>
  );
}

export function QuoteOrderModal<Q>(props: QuoteOrderModalProps<Q>) {
  const { title, okText, width = 520, notice, details, children, quote, errorText, totalLabel, totalTestId, footer, okDisabled = false } = props;
  const { create, paidText, doneText = paidText, unpaidText, onChange, onDone, onClose } = props;
  const priced = props.priced ?? ((q: Q) => q as PricedLines);
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [paying, setPaying] = useState<Order | null>(null);
  /** Where the order in the pay dialog ended up (null: still unpaid), so its closing says the right thing. */
  const outcome = useRef<OrderStatus | null>(null);

  const done = (text: string) => {
    void message.success(text);
    onDone?.();
    onClose();
  };

  const submit = useMutation({
    mutationFn: create,
    onSuccess: (order) => {
      onChange?.();
      if (!order) return done(doneText);
      invalidateOrderViews(queryClient);
      outcome.current = null;
      setPaying(order);
    },
  });

  if (paying) {
    return (
      <OrderPayModal
        order={paying}
        onSettled={(status) => {
          outcome.current = status;
          onChange?.();
          if (status === 'Success') done(paidText);
        }}
        onClose={() => {
          if (outcome.current === null) void message.info(unpaidText);
          onClose();
        }}
      />
    );
  }

  const q = quote.data;
  const fresh = q !== undefined && !quote.isPlaceholderData && !quote.isError;
  return (
    <Modal
      open
      title={title}
      okText={okText}
      cancelText="取消"
      okButtonProps={{ disabled: !fresh || okDisabled }}
      confirmLoading={submit.isPending}
      onOk={() => submit.mutate()}
      onCancel={onClose}
      destroyOnHidden
      width={width}
    >
      <Flex vertical gap={16}>
        {notice}
        <Descriptions column={1} size="small" items={details} />
        {children}
        {quote.isError ? (
          <Alert type="error" showIcon title={errorText ? errorText(quote.error) : `询价失败：${quote.error.message}`} />
        ) : q === undefined ? (
          <Skeleton active paragraph={{ rows: 2 }} />
        ) : (
          <Flex vertical gap={8}>
            <QuoteLines lines={priced(q).lines} />
            <QuoteTotal label={typeof totalLabel === 'function' ? totalLabel(q) : totalLabel} units={priced(q).total} testId={totalTestId} />
            {footer?.(q)}
          </Flex>
        )}
      </Flex>
    </Modal>
  );
}
