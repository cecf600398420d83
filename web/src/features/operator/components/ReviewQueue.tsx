import { useState } from 'react';
import { Button, Descriptions, Drawer, Empty, Flex, Image, Popconfirm, Segmented, Space, Typography } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ReviewKind, reviewDecisionSchema, type CertStatus, type ReviewDecision, type ReviewItem } from '@console/contract';
import { OPERATOR_KEYS, operatorApi } from '../../account';
import { BASES } from '../../../api/bases';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import type { Paging } from '../../../routing/useUrlPaging';
import { CertStatusTag, formatMinute, RejectModal } from './operatorViews';

export const REVIEW_FILTERS = ['Pending', 'all', 'Succeed', 'Failed'] as const;
export type ReviewFilter = (typeof REVIEW_FILTERS)[number];
const FILTER_LABEL: Record<ReviewFilter, string> = { Pending: '待审核', all: '全部', Succeed: '已通过', Failed: '未通过' };

type Kind = 'enterprise' | 'student';

/** One review queue (enterprise certifications or student verifications), paged by the server. */
export function ReviewQueue({
  kind,
  status,
  paging,
  onStatus,
  onPage,
}: {
  kind: Kind;
  status: ReviewFilter;
  paging: Paging;
  onStatus: (status: ReviewFilter) => void;
  onPage: (next: Paging) => void;
}) {
  const list = usePagedQuery({
    queryKey: OPERATOR_KEYS.reviews(kind, status, paging.page, paging.pageSize),
    queryFn: () => operatorApi.reviews({ kind, status: status === 'all' ? undefined : status, page: paging.page, pageSize: paging.pageSize }),
  });
  const [open, setOpen] = useState<ReviewItem | null>(null);

  return (
    <Flex vertical gap={16}>
      <Segmented<ReviewFilter>
        aria-label="审核状态"
        value={status}
        onChange={onStatus}
        options={REVIEW_FILTERS.map((f) => ({ value: f, label: FILTER_LABEL[f] }))}
        style={{ alignSelf: 'flex-start' }}
      />
      <PagedTable<ReviewItem>
        list={list}
        paging={paging}
        onPage={onPage}
        empty={status === 'Pending' ? '暂无待审核的申请' : '暂无申请记录'}
        rowKey="id"
        scroll={{ x: 1000 }}
        columns={[
          { title: '提交时间', dataIndex: 'submittedAt', width: 150, render: (v: string | null) => formatMinute(v) },
          { title: '手机号', dataIndex: 'mobile', width: 130 },
          {
            title: '申请信息',
            key: 'fields',
            render: (_, item) => (
              <Flex vertical gap={2}>
                {item.fields.map((f) => (
                  <div key={f.label} title={`${f.label}：${f.value}`} style={{ overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
                    <Typography.Text type="secondary">{f.label}：</Typography.Text>
                    <span>{f.value || '--'}</span>
                  </div>
                ))}
              </Flex>
            ),
          },
          { title: '状态', dataIndex: 'status', width: 100, render: (s: CertStatus) => <CertStatusTag status={s} /> },
          {
            title: '原因',
            dataIndex: 'reason',
            width: 180,
            render: (r: string) =>
              r ? <Typography.Text ellipsis={{ tooltip: r }}>{r}</Typography.Text> : <Typography.Text type="secondary">--</Typography.Text>,
          },
          {
            title: '操作',
            key: 'actions',
            width: 90,
            fixed: 'right',
            render: (_, item) => (
              <Button type="link" style={{ paddingInline: 0 }} onClick={() => setOpen(item)}>
                {item.status === 'Pending' ? '查看审核' : '查看'}
              </Button>
            ),
          },
        ]}
      />
      <ReviewDrawer kind={kind} item={open} onClose={() => setOpen(null)} />
    </Flex>
  );
}

/**
 * An application in full, with its image. The decision is taken here rather than from the row so
 * that the operator has the image in front of them when approving.
 */
function ReviewDrawer({ kind, item, onClose }: { kind: Kind; item: ReviewItem | null; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [rejecting, setRejecting] = useState(false);
  const decide = useMutation({
    mutationFn: (decision: ReviewDecision) => operatorApi.decide(kind, item!.id, decision),
    onSuccess: () => {
      setRejecting(false);
      onClose();
    },
    // Success or not, the queue, the users' states and the log may have moved on.
    onSettled: () => queryClient.invalidateQueries({ queryKey: OPERATOR_KEYS.all }),
  });
  const pending = item?.status === 'Pending';

  return (
    <Drawer
      title={`${ReviewKind[kind]}申请`}
      open={item !== null}
      onClose={onClose}
      size={560}
      destroyOnHidden
      footer={
        pending && (
          <Flex justify="flex-end" gap={8}>
            <Button danger onClick={() => setRejecting(true)} disabled={decide.isPending}>
              驳回
            </Button>
            <Popconfirm
              title="通过该申请？"
              description={kind === 'enterprise' ? '通过后该用户即完成企业认证。' : '通过后该用户即可享受学生优惠。'}
              okText="确认通过"
              onConfirm={() => decide.mutateAsync({ decision: 'approve' }).catch(() => undefined)}
            >
              <Button type="primary" loading={decide.isPending && !rejecting}>
                通过
              </Button>
            </Popconfirm>
          </Flex>
        )
      }
    >
      {item && (
        <Flex vertical gap={16}>
          <Descriptions
            column={1}
            size="small"
            bordered
            styles={{ label: { width: 150 } }}
            items={[
              { key: 'mobile', label: '手机号', children: item.mobile },
              ...item.fields.map((f) => ({ key: f.label, label: f.label, children: f.value || '--' })),
              { key: 'submittedAt', label: '提交时间', children: formatMinute(item.submittedAt) },
              { key: 'status', label: '状态', children: <CertStatusTag status={item.status} /> },
              ...(pending ? [] : [{ key: 'decidedAt', label: '审核时间', children: formatMinute(item.decidedAt) }]),
              ...(item.reason ? [{ key: 'reason', label: '原因', children: item.reason }] : []),
            ]}
          />
          <Space orientation="vertical" size={8} style={{ width: '100%' }}>
            <Typography.Text strong>{kind === 'enterprise' ? '营业执照' : '学生证'}</Typography.Text>
            <ReviewImage key={item.imageUrl} src={BASES.main.url + item.imageUrl} alt={kind === 'enterprise' ? '营业执照' : '学生证'} />
          </Space>
        </Flex>
      )}
      <RejectModal
        open={rejecting}
        loading={decide.isPending}
        extra="用户会在认证页面看到这段原因"
        placeholder="如：营业执照图片模糊，请重新上传清晰的照片"
        check={(reason) => {
          const parsed = reviewDecisionSchema.safeParse({ decision: 'reject', reason });
          return parsed.success ? undefined : (parsed.error.issues[0]?.message ?? '驳回原因不正确');
        }}
        onCancel={() => setRejecting(false)}
        onReject={(reason) => decide.mutateAsync({ decision: 'reject', reason }).catch(() => undefined)}
      />
    </Drawer>
  );
}

/** The image is served only to operators (the session cookie authenticates the request). */
function ReviewImage({ src, alt }: { src: string; alt: string }) {
  const [failed, setFailed] = useState(false);
  if (failed) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="图片加载失败或未上传" />;
  return <Image src={src} alt={alt} width="100%" style={{ maxHeight: 420, objectFit: 'contain', background: '#fafafa' }} onError={() => setFailed(true)} />;
}
