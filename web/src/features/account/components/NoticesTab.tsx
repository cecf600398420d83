import { Alert, Flex, Switch, Table, Typography, type TableColumnsType } from 'antd';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { PAGE, type NoticeKind, type NoticePreference, type NoticePreferences } from '@console/contract';
import { NOTICE_KEYS, noticesApi, noticeQueries } from '../../../api/notices';
import { LoadError } from '../../../components/LoadError';

type Channel = 'sms' | 'mail';

/**
 * 消息通知 (账号中心): per kind of notice, whether it also comes by SMS and by e-mail. 站内信 always
 * arrives (the message center); a switch saves at once.
 */
export function NoticesTab() {
  const queryClient = useQueryClient();
  const prefs = useQuery(noticeQueries.preferences());
  const save = useMutation({
    mutationFn: ({ kind, channel, on }: { kind: NoticeKind; channel: Channel; on: boolean }) => {
      const cur = prefs.data!.items.find((i) => i.kind === kind)!;
      return noticesApi.setPreferences({ items: [{ kind, sms: cur.sms, mail: cur.mail, [channel]: on }] });
    },
    onSuccess: (next: NoticePreferences) => queryClient.setQueryData(NOTICE_KEYS.preferences, next),
  });
  if (prefs.isError) return <LoadError error={prefs.error} onRetry={() => void prefs.refetch()} />;
  const saving = (kind: NoticeKind, channel: Channel) => save.isPending && save.variables?.kind === kind && save.variables.channel === channel;
  const toggle = (p: NoticePreference, channel: Channel, label: string) => (
    <Switch
      size="small"
      aria-label={`${p.label} ${label}`}
      checked={p[channel]}
      loading={saving(p.kind, channel)}
      disabled={save.isPending}
      onChange={(on) => save.mutate({ kind: p.kind, channel, on })}
    />
  );
  const columns: TableColumnsType<NoticePreference> = [
    {
      title: '通知类型',
      key: 'kind',
      render: (_, p) => (
        <Flex vertical>
          <Typography.Text strong>{p.label}</Typography.Text>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {p.description}
          </Typography.Text>
        </Flex>
      ),
    },
    { title: '站内信', key: 'site', width: 90, render: (_, p) => <Switch size="small" aria-label={`${p.label} 站内信`} checked disabled /> },
    { title: '短信', key: 'sms', width: 90, render: (_, p) => toggle(p, 'sms', '短信') },
    { title: '邮件', key: 'mail', width: 90, render: (_, p) => toggle(p, 'mail', '邮件') },
  ];
  const missing = [!prefs.data?.mobile && prefs.data && '手机号（短信无法送达）', !prefs.data?.email && prefs.data && '邮箱（邮件无法送达）'].filter(Boolean);
  return (
    <Flex vertical gap={16} style={{ maxWidth: 820 }}>
      <Alert
        type="info"
        showIcon
        title="站内信始终接收"
        description={
          <>
            所有通知都会发到<Link to={PAGE.message}>消息中心</Link>（页面右上角的铃铛显示未读数）；短信和邮件按下表设置另行发送。
          </>
        }
      />
      {missing.length > 0 && <Alert type="warning" showIcon title={`尚未绑定${missing.join('、')}`} description={<>可在本页「安全设置」中绑定。</>} />}
      <Table<NoticePreference> rowKey="kind" columns={columns} dataSource={prefs.data?.items} loading={prefs.isPending} pagination={false} />
    </Flex>
  );
}
