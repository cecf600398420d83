import type { ReactNode } from 'react';
import { Alert, Button, Card, Empty, Flex, type TableProps } from 'antd';
import type { QueryKey } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useUrlPaging, type Paging } from '../routing/useUrlPaging';
import { PagedTable, RefreshButton, usePagedQuery, type ListPage } from './PagedTable';
import { PageFrame } from './PageFrame';

export interface PagedListPageProps<T extends object, P extends ListPage<T>> {
  /** The query key of one page. */
  queryKey: (page: number, pageSize: number) => QueryKey;
  queryFn: (paging: Paging, signal: AbortSignal) => Promise<P>;
  /** While an item on the page is mid-operation, the page refreshes itself every `ms` (not after a failed refresh). */
  poll?: { busy: (item: T) => boolean; ms: number };
  /** The info notice above the table: what the list is about; it may read the page (limits, prices). */
  notice: (data: P | undefined) => { title: ReactNode; description: ReactNode };
  /** The empty table: what is missing, and a link to where the first one is made. */
  empty: { text: string; to: string; action: string };
  /** What the items are called after the total: `共 ${total} ${unit}`. */
  unit: string;
  table: Pick<TableProps<T>, 'rowKey' | 'columns' | 'scroll'>;
  /** Dialogs the page opens. */
  children?: ReactNode;
  /** Actions in the header, before the refresh button (e.g. the page's 创建 button). */
  extra?: ReactNode;
}

/** A console page that is one server-paged table: header with refresh, a notice, the table, paging in the URL. */
export function PagedListPage<T extends object, P extends ListPage<T>>({
  queryKey,
  queryFn,
  poll,
  notice,
  empty,
  unit,
  table,
  children,
  extra,
}: PagedListPageProps<T, P>) {
  const { paging, set } = useUrlPaging();
  const list = usePagedQuery({
    queryKey: queryKey(paging.page, paging.pageSize),
    queryFn: (signal) => queryFn(paging, signal),
    // Not after a failed refresh: the user retries.
    refetchInterval: poll && ((data, failed) => (!failed && data?.items.some(poll.busy) ? poll.ms : false)),
  });
  const { title, description } = notice(list.data);

  return (
    <PageFrame
      extra={
        <Flex gap={8}>
          {extra}
          <RefreshButton list={list} />
        </Flex>
      }
    >
      <Card>
        <Flex vertical gap={16}>
          <Alert type="info" showIcon title={title} description={description} />
          <PagedTable<T> {...table} list={list} paging={paging} onPage={set} unit={unit} empty={<EmptyWithAction {...empty} />} />
        </Flex>
      </Card>
      {children}
    </PageFrame>
  );
}

function EmptyWithAction({ text, to, action }: { text: string; to: string; action: string }) {
  return (
    <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={text}>
      <Link to={to}>
        <Button type="primary">{action}</Button>
      </Link>
    </Empty>
  );
}
