import { useSyncExternalStore } from 'react';
import { Badge, Tooltip } from 'antd';
import { BellOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { PAGE } from '@console/contract';
import { noticeQueries } from '../api/notices';
import { session } from '../session/store';

/** How often the header asks for new 站内信 while a console page is open. */
export const UNREAD_POLL_MS = 60_000;

/** The unread 站内信 count of the session, polled; shared by the bell and the message center. */
export function useUnreadQuery() {
  const token = useSyncExternalStore(session.subscribe, session.getToken);
  return useQuery({
    ...noticeQueries.unread(token),
    enabled: token !== null,
    refetchInterval: UNREAD_POLL_MS,
    staleTime: 15_000,
  });
}

/** The header bell: the unread count (none shown when there is none or it is unavailable), a link to the message center. */
export function NoticeBell() {
  const unread = useUnreadQuery();
  const count = unread.data?.count ?? 0;
  return (
    <Tooltip title={count ? `${count} 条未读消息` : '消息中心'}>
      <Link to={PAGE.message} aria-label={count ? `消息中心，${count} 条未读` : '消息中心'} className="notice-bell">
        <Badge count={count} size="small" overflowCount={99}>
          <BellOutlined style={{ fontSize: 18 }} />
        </Badge>
      </Link>
    </Tooltip>
  );
}
