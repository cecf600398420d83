import { Tag } from 'antd';
import { CertStatus, CertType } from '@console/contract';

const COLOR: Record<CertStatus, string> = { Init: 'default', Pending: 'processing', Succeed: 'green', Failed: 'red' };

/** "个人认证 · 已认证"; "未认证" while nothing was submitted (spec §4: Init has no label). */
export function CertTag({ type, status }: { type: CertType; status: CertStatus }) {
  if (type === 'Uncertified' || status === 'Init') return <Tag>未认证</Tag>;
  return <Tag color={COLOR[status]}>{`${CertType.label(type)} · ${CertStatus.label(status)}`}</Tag>;
}
