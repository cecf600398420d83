import { useState } from 'react';
import { Button, Descriptions, Flex, Form, Input, Modal, Segmented, Space, Typography, type TableColumnsType } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import {
  InvoiceKind,
  InvoiceStatus,
  InvoiceTitleType,
  formatYuan,
  invoiceIssueSchema,
  invoiceRejectSchema,
  type InvoiceKind as Kind,
  type InvoiceStatus as Status,
  type InvoiceTitleType as TitleType,
  type OperatorInvoice,
} from '@console/contract';
import { isApiError } from '../../../api/errors';
import { INVOICE_KEYS, operatorInvoiceApi } from '../../billing';
import { OPERATOR_KEYS } from '../../account';
import { InvoiceStatusTag } from '../../../components/invoiceViews';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { formatMinute, RejectModal } from './operatorViews';

export type InvoiceFilter = 'all' | Status;
/** Pending first (the default), then 全部, then every other status the contract defines. */
export const INVOICE_FILTERS: readonly InvoiceFilter[] = ['Pending', 'all', ...InvoiceStatus.values.filter((s) => s !== 'Pending')];
const filterLabel = (f: InvoiceFilter) => (f === 'all' ? '全部' : InvoiceStatus.label(f));

type Decision = { id: string; action: 'issue'; invoiceNo: string } | { id: string; action: 'reject'; reason: string };

const none = <Typography.Text type="secondary">--</Typography.Text>;

/** 发票: the holders' invoice requests, paged by the server; a pending one is issued (with its number) or rejected. */
export function InvoiceQueue({
  status,
  paging,
  onStatus,
  onPage,
}: {
  status: InvoiceFilter;
  paging: Paging;
  onStatus: (status: InvoiceFilter) => void;
  onPage: (next: Paging) => void;
}) {
  const queryClient = useQueryClient();
  const list = usePagedQuery({
    queryKey: OPERATOR_KEYS.invoices(status, paging.page, paging.pageSize),
    queryFn: (signal) => operatorInvoiceApi.list({ status: status === 'all' ? undefined : status, page: paging.page, pageSize: paging.pageSize }, signal),
  });
  const [acting, setActing] = useState<{ invoice: OperatorInvoice; action: Decision['action'] } | null>(null);
  const decide = useMutation({
    mutationFn: (d: Decision) => (d.action === 'issue' ? operatorInvoiceApi.issue(d.id, d.invoiceNo) : operatorInvoiceApi.reject(d.id, d.reason)),
    onSuccess: () => setActing(null),
    onError: (e) => {
      // Decided or withdrawn meanwhile: the toast says so and the refreshed list shows how it ended.
      if (isApiError(e, 'INVOICE_STATE_INVALID', 'RECORD_NOT_FOUND')) setActing(null);
    },
    // Success or not, the queue has moved on (and so has the holder's view, should it be cached here).
    onSettled: () =>
      Promise.all([queryClient.invalidateQueries({ queryKey: OPERATOR_KEYS.all }), queryClient.invalidateQueries({ queryKey: INVOICE_KEYS.all })]),
  });
  const submit = (d: Decision) => decide.mutateAsync(d).catch(() => undefined);
  // A pending request has no number or reason yet; a closed one has nothing left to do.
  const showOutcome = status !== 'Pending';
  const showActions = status === 'Pending' || status === 'all';
  const allColumns: TableColumnsType<OperatorInvoice> = [
    { title: '申请时间', dataIndex: 'createdAt', width: 145, render: (v: string) => formatMinute(v) },
    { title: '手机号', dataIndex: 'mobile', width: 120, render: (m: string) => m || '--' },
    { title: '发票类型', dataIndex: 'kind', width: 130, render: (k: Kind) => InvoiceKind.label(k) },
    { title: '抬头类型', dataIndex: 'titleType', width: 95, render: (t: TitleType) => InvoiceTitleType.label(t) },
    { title: '抬头', dataIndex: 'title', width: 180, render: (t: string) => <Typography.Text ellipsis={{ tooltip: t }}>{t}</Typography.Text> },
    {
      title: '税号',
      dataIndex: 'taxNo',
      width: 190,
      render: (t: string) =>
        t ? (
          <Typography.Text className="mono" style={{ fontSize: 12 }} copyable={{ text: t, tooltips: ['复制', '已复制'] }}>
            {t}
          </Typography.Text>
        ) : (
          none
        ),
    },
    { title: '金额（元）', dataIndex: 'amount', width: 105, align: 'right', render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span> },
    { title: '接收邮箱', dataIndex: 'email', width: 180, render: (e: string) => <Typography.Text ellipsis={{ tooltip: e }}>{e}</Typography.Text> },
    // What the operator acts on stays in view while the request's details scroll.
    { title: '状态', dataIndex: 'status', width: 85, fixed: 'right', render: (s: Status) => <InvoiceStatusTag status={s} /> },
    {
      title: '发票号 / 驳回原因',
      key: 'outcome',
      width: 200,
      fixed: 'right',
      render: (_, r) =>
        r.invoiceNo ? (
          <Typography.Text className="mono" style={{ fontSize: 12 }} copyable={{ text: r.invoiceNo, tooltips: ['复制', '已复制'] }}>
            {r.invoiceNo}
          </Typography.Text>
        ) : r.rejectReason ? (
          <Typography.Text type="danger" ellipsis={{ tooltip: r.rejectReason }}>
            {r.rejectReason}
          </Typography.Text>
        ) : (
          none
        ),
    },
    {
      title: '操作',
      key: 'actions',
      width: 110,
      fixed: 'right',
      render: (_, r) =>
        r.status === 'Pending' ? (
          <Space size={12}>
            <Button type="link" style={{ paddingInline: 0 }} onClick={() => setActing({ invoice: r, action: 'issue' })}>
              开票
            </Button>
            <Button type="link" danger style={{ paddingInline: 0 }} onClick={() => setActing({ invoice: r, action: 'reject' })}>
              驳回
            </Button>
          </Space>
        ) : (
          none
        ),
    },
  ];
  const columns = allColumns.filter((c) => (c.key !== 'outcome' || showOutcome) && (c.key !== 'actions' || showActions));

  return (
    <Flex vertical gap={16}>
      <Segmented<InvoiceFilter>
        aria-label="开票状态"
        value={status}
        onChange={onStatus}
        options={INVOICE_FILTERS.map((f) => ({ value: f, label: filterLabel(f) }))}
        style={{ alignSelf: 'flex-start' }}
      />
      <PagedTable<OperatorInvoice>
        list={list}
        paging={paging}
        onPage={onPage}
        empty={status === 'Pending' ? '暂无待开票的申请' : '暂无开票申请'}
        rowKey="id"
        scroll={{ x: columns.reduce((sum, c) => sum + Number(c.width), 0) }}
        columns={columns}
      />
      <IssueModal
        invoice={acting?.action === 'issue' ? acting.invoice : null}
        loading={decide.isPending}
        onCancel={() => setActing(null)}
        onIssue={(invoiceNo) => submit({ id: acting!.invoice.id, action: 'issue', invoiceNo })}
      />
      <RejectModal
        title="驳回开票申请"
        open={acting?.action === 'reject'}
        loading={decide.isPending}
        extra="用户会在财务页的发票记录中看到这段原因"
        placeholder="如：抬头与纳税人识别号不一致，请核对后重新申请"
        check={(reason) => {
          const parsed = invoiceRejectSchema.safeParse({ reason });
          return parsed.success ? undefined : (parsed.error.issues[0]?.message ?? '驳回原因不正确');
        }}
        onCancel={() => setActing(null)}
        onReject={(reason) => submit({ id: acting!.invoice.id, action: 'reject', reason })}
      />
    </Flex>
  );
}

/** 开票: the request to check against, and the number of the invoice sent to the holder's e-mail. */
function IssueModal({
  invoice,
  loading,
  onCancel,
  onIssue,
}: {
  invoice: OperatorInvoice | null;
  loading: boolean;
  onCancel: () => void;
  onIssue: (invoiceNo: string) => Promise<unknown>;
}) {
  const [form] = Form.useForm<{ invoiceNo: string }>();
  return (
    <Modal title="开票" open={invoice !== null} okText="确认开票" okButtonProps={{ loading }} onCancel={onCancel} onOk={() => form.submit()} destroyOnHidden>
      {invoice && (
        <Descriptions
          column={1}
          size="small"
          bordered
          styles={{ label: { width: 120 } }}
          style={{ marginBottom: 16 }}
          items={[
            { key: 'mobile', label: '手机号', children: invoice.mobile || '--' },
            { key: 'kind', label: '发票类型', children: InvoiceKind.label(invoice.kind) },
            { key: 'title', label: '抬头', children: `${invoice.title}（${InvoiceTitleType.label(invoice.titleType)}）` },
            ...(invoice.taxNo ? [{ key: 'taxNo', label: '税号', children: <span className="mono">{invoice.taxNo}</span> }] : []),
            { key: 'amount', label: '金额', children: `¥${formatYuan(invoice.amount)}` },
            { key: 'email', label: '接收邮箱', children: invoice.email },
          ]}
        />
      )}
      <Form form={form} layout="vertical" requiredMark={false} preserve={false} onFinish={(v) => onIssue(v.invoiceNo.trim())}>
        <Form.Item
          name="invoiceNo"
          label="发票号码"
          extra="请先将电子发票发送到接收邮箱；用户会在发票记录中看到这个号码"
          rules={[
            { required: true, whitespace: true, message: '请输入发票号码' },
            {
              validator: async (_, value: string | undefined) => {
                if (!value?.trim()) return;
                const parsed = invoiceIssueSchema.safeParse({ invoiceNo: value });
                if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? '发票号码不正确');
              },
            },
          ]}
        >
          <Input className="mono" maxLength={32} placeholder="8-32 位字母、数字或连字符" autoComplete="off" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
