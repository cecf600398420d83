import { useState } from 'react';
import { Alert, App, Button, Card, Flex, Form, Input, InputNumber, Modal, Radio, Statistic, Tooltip, Typography } from 'antd';
import { FileTextOutlined, InfoCircleOutlined, ReloadOutlined } from '@ant-design/icons';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  InvoiceKind,
  InvoiceTitleType,
  TAX_NO_MESSAGE,
  formatYuan,
  isValidTaxNo,
  fenFloorText,
  type InvoiceKind as Kind,
  type InvoiceTitleType as TitleType,
  type Invoice,
  type Invoiceable,
} from '@console/contract';
import { INVOICE_KEYS, invoicesApi, invoiceQueries } from '../api/invoices';
import { CustomerServiceButton } from '../../../components/CustomerService';
import { InvoiceStatusTag } from '../../../components/invoiceViews';
import { LoadError } from '../../../components/LoadError';
import { formatTime } from '../../../components/orderViews';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { useSession } from '../../../session/useSession';

/** /finance 发票: the invoiceable amount, the request form, and the requests with their status. */
export function InvoiceSection() {
  const { user } = useSession();
  if (user?.isChild) {
    return (
      <Card title="发票">
        <Alert type="info" showIcon title="发票由主账号申请" description="子账号不能申请或查看发票，如需开票请联系主账号。" />
      </Card>
    );
  }
  return <Invoices />;
}

function Invoices() {
  const invoiceable = useQuery(invoiceQueries.invoiceable());
  // The finance page also pages a statement: each list keeps its page under its own names in the URL.
  const { paging, set: setPaging } = useUrlPaging({ key: 'invoice' });
  const list = usePagedQuery({
    queryKey: INVOICE_KEYS.list(paging.page, paging.pageSize),
    queryFn: (signal) => invoicesApi.list(paging, signal),
  });
  const [requesting, setRequesting] = useState(false);
  const cancel = useCancelInvoice();
  const left = invoiceable.data ? BigInt(invoiceable.data.invoiceable) : 0n;

  return (
    <Card
      title="发票"
      extra={
        <Flex gap={8}>
          <CustomerServiceButton type="link" />
          <Button
            icon={<ReloadOutlined />}
            aria-label="刷新发票"
            onClick={() => void Promise.all([invoiceable.refetch(), list.refetch()])}
            loading={list.isFetching && !list.isPending}
          />
        </Flex>
      }
    >
      <Flex vertical gap={16}>
        {invoiceable.isError ? (
          <LoadError error={invoiceable.error} onRetry={() => void invoiceable.refetch()} />
        ) : (
          <Flex align="center" justify="space-between" gap={16} wrap className="invoice-summary">
            <Flex align="center" gap={16}>
              <FileTextOutlined className="finance-invoice-icon" />
              <Statistic
                title={
                  <span>
                    可开票金额{' '}
                    <Tooltip title={invoiceable.data ? <Breakdown a={invoiceable.data} /> : undefined}>
                      <InfoCircleOutlined aria-label="可开票金额说明" />
                    </Tooltip>
                  </span>
                }
                loading={invoiceable.isPending}
                // Rounded down to the fen, like the form's maximum: never more than may be asked for.
                value={invoiceable.data ? fenFloorText(BigInt(invoiceable.data.invoiceable)) : '--'}
                prefix="¥"
              />
            </Flex>
            <Flex vertical align="end" gap={4}>
              <Button type="primary" disabled={left < 100n} onClick={() => setRequesting(true)}>
                申请开票
              </Button>
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                按实际现金消费（订单与按量计费的现金支出）开具，赠送金、代金券不开票
              </Typography.Text>
            </Flex>
          </Flex>
        )}

        <PagedTable<Invoice>
          list={list}
          paging={paging}
          onPage={setPaging}
          empty="暂无开票申请：产生现金消费后可在这里申请电子发票"
          rowKey="id"
          scroll={{ x: 960 }}
          tableLayout="auto"
          columns={[
            { title: '申请时间', dataIndex: 'createdAt', width: 170, render: (v: string) => formatTime(v) },
            { title: '发票类型', dataIndex: 'kind', width: 130, render: (k: Kind) => InvoiceKind.label(k) },
            {
              title: '抬头',
              dataIndex: 'title',
              render: (t: string, r) => (
                <Flex vertical gap={0}>
                  <span>
                    {t} <Typography.Text type="secondary">（{InvoiceTitleType.label(r.titleType)}）</Typography.Text>
                  </span>
                  {r.taxNo && (
                    <Typography.Text type="secondary" className="mono" style={{ fontSize: 12 }}>
                      {r.taxNo}
                    </Typography.Text>
                  )}
                </Flex>
              ),
            },
            {
              title: '金额（元）',
              dataIndex: 'amount',
              width: 110,
              align: 'right',
              render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span>,
            },
            { title: '接收邮箱', dataIndex: 'email', width: 200, ellipsis: true },
            {
              title: '状态',
              dataIndex: 'status',
              width: 200,
              render: (s: Invoice['status'], r) => (
                <Flex vertical gap={2} align="start">
                  <InvoiceStatusTag status={s} />
                  {r.invoiceNo && (
                    <Typography.Text style={{ fontSize: 12 }}>
                      发票号码 <span className="mono">{r.invoiceNo}</span>
                    </Typography.Text>
                  )}
                  {r.rejectReason && (
                    <Typography.Text type="danger" style={{ fontSize: 12 }}>
                      驳回原因：{r.rejectReason}
                    </Typography.Text>
                  )}
                </Flex>
              ),
            },
            {
              title: '操作',
              key: 'op',
              width: 90,
              render: (_, r) =>
                r.status === 'Pending' ? (
                  <Button type="link" size="small" danger onClick={() => cancel(r)}>
                    撤回
                  </Button>
                ) : (
                  '--'
                ),
            },
          ]}
        />
      </Flex>
      {requesting && invoiceable.data && <InvoiceRequestModal invoiceable={invoiceable.data.invoiceable} onClose={() => setRequesting(false)} />}
    </Card>
  );
}

function Breakdown({ a }: { a: Invoiceable }) {
  return (
    <div>
      <div>按实际现金消费开票：订单与按量计费的现金支出，退款退回余额的部分不计；赠送金、代金券不开票。</div>
      <div>现金消费：¥{formatYuan(a.consumed)}</div>
      <div>充值与扫码支付实付：¥{formatYuan(a.paidIn)}（可开票不超过此数减去已退回原支付渠道的金额）</div>
      <div>已退回原支付渠道：¥{formatYuan(a.refunded)}</div>
      <div>已开票：¥{formatYuan(a.invoiced)}</div>
      <div>待开票：¥{formatYuan(a.pending)}</div>
    </div>
  );
}

/** 撤回 a pending request, after a confirmation. */
function useCancelInvoice() {
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: (id: string) => invoicesApi.cancel(id),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: INVOICE_KEYS.all }),
  });
  return (invoice: Invoice) =>
    modal.confirm({
      title: '确认撤回开票申请？',
      content: `撤回后这笔 ¥${formatYuan(invoice.amount)} 的申请不再开具，金额回到可开票金额，可重新申请。`,
      okText: '撤回',
      okButtonProps: { danger: true },
      cancelText: '再想想',
      onOk: () => cancel.mutateAsync(invoice.id).catch(() => undefined),
    });
}

interface FormValues {
  kind: Kind;
  titleType: TitleType;
  title: string;
  taxNo?: string;
  email: string;
  amount: string | null;
}

/** The request form: the server checks everything again (amount against the invoiceable amount under a lock). */
function InvoiceRequestModal({ invoiceable, onClose }: { invoiceable: string; onClose: () => void }) {
  const [form] = Form.useForm<FormValues>();
  const queryClient = useQueryClient();
  const kind = Form.useWatch('kind', form);
  const titleType = Form.useWatch('titleType', form);
  const max = fenFloorText(BigInt(invoiceable));
  const create = useMutation({
    mutationFn: (v: FormValues) =>
      invoicesApi.create({ kind: v.kind, titleType: v.titleType, title: v.title, taxNo: v.taxNo ?? '', email: v.email, amount: String(v.amount) }),
    onSuccess: () => onClose(),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: INVOICE_KEYS.all }),
  });
  const enterprise = titleType === 'enterprise';

  return (
    <Modal
      open
      title="申请开票"
      okText="提交申请"
      cancelText="取消"
      confirmLoading={create.isPending}
      onOk={() => form.submit()}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form<FormValues>
        form={form}
        layout="vertical"
        requiredMark
        initialValues={{ kind: 'normal', titleType: 'personal', amount: max }}
        onFinish={(v) => create.mutate(v)}
        onValuesChange={(changed: Partial<FormValues>) => {
          // 专用发票 is for enterprises only: choosing it switches the title type.
          if (changed.kind === 'special') form.setFieldValue('titleType', 'enterprise');
        }}
      >
        <Form.Item name="kind" label="发票类型" rules={[{ required: true, message: '请选择发票类型' }]}>
          <Radio.Group options={InvoiceKind.values.map((k) => ({ value: k, label: InvoiceKind.label(k) }))} />
        </Form.Item>
        <Form.Item
          name="titleType"
          label="抬头类型"
          rules={[{ required: true, message: '请选择抬头类型' }]}
          extra={kind === 'special' ? '增值税专用发票仅能开给企业抬头' : undefined}
        >
          <Radio.Group
            options={InvoiceTitleType.values.map((t) => ({ value: t, label: InvoiceTitleType.label(t), disabled: kind === 'special' && t === 'personal' }))}
          />
        </Form.Item>
        <Form.Item
          name="title"
          label="发票抬头"
          rules={[
            { required: true, whitespace: true, message: '请输入发票抬头' },
            { min: 2, max: 100, message: '发票抬头为 2-100 个字' },
          ]}
        >
          <Input placeholder={enterprise ? '与营业执照上的名称一致' : '个人姓名'} maxLength={100} />
        </Form.Item>
        <Form.Item
          name="taxNo"
          label="纳税人识别号"
          normalize={(v: string | undefined) => v?.toUpperCase().trim()}
          rules={[
            { required: enterprise, message: '企业抬头请输入纳税人识别号' },
            { validator: async (_, v: string | undefined) => (!v || isValidTaxNo(v) ? undefined : Promise.reject(new Error(TAX_NO_MESSAGE))) },
          ]}
          extra={enterprise ? '统一社会信用代码（18 位）或税务登记证号（15 / 20 位）' : '个人抬头可不填'}
        >
          <Input placeholder="如 91350100M000100Y43" maxLength={20} className="mono" />
        </Form.Item>
        <Form.Item
          name="email"
          label="接收邮箱"
          rules={[
            { required: true, message: '请输入接收电子发票的邮箱' },
            { type: 'email', message: '请输入正确的邮箱地址' },
          ]}
        >
          <Input placeholder="电子发票将发送到这个邮箱" maxLength={254} />
        </Form.Item>
        <Form.Item
          name="amount"
          label="开票金额（元）"
          extra={`本次最多可开 ¥${max}`}
          rules={[
            { required: true, message: '请输入开票金额' },
            {
              validator: async (_, v: string | null) => {
                if (v === null || v === undefined || v === '') return;
                if (!/^\d{1,9}(\.\d{1,2})?$/.test(String(v))) throw new Error('金额须为数字，最多两位小数');
                if (Number(v) <= 0) throw new Error('开票金额须大于 0');
                if (Number(v) > Number(max)) throw new Error(`开票金额不能超过可开票金额 ¥${max}`);
              },
            },
          ]}
        >
          {/* No min/max here: the rules say what is wrong in words instead of silently clamping the number. */}
          <InputNumber<string> stringMode precision={2} step="1" prefix="¥" style={{ width: '100%' }} aria-label="开票金额" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
