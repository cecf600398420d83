/** How an invoice request is shown on both sides (the holder's /finance and the operator's 发票 tab). */
import { Tag } from 'antd';
import { InvoiceStatus, InvoiceStatusColor, type InvoiceStatus as Status } from '@console/contract';

export function InvoiceStatusTag({ status }: { status: Status }) {
  return (
    <Tag color={InvoiceStatusColor[status]} style={{ marginInlineEnd: 0 }}>
      {InvoiceStatus.label(status)}
    </Tag>
  );
}
