import type { ReactNode } from 'react';
import { Alert, Button, Card, Empty, Flex, Table, type TableProps } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { keepPreviousData, useQuery, type QueryKey } from '@tanstack/react-query';
import { Link } from 'react-router';
import { PAGE_SIZES, useUrlPaging, type Paging } from '../routing/useUrlPaging';
import { LoadError } from './LoadError';
import { PageFrame } from './PageFrame';

/** One page of a server-paged list (DESIGN.md: `{ items, total, page, pageSize }`). */
export interface ListPage<T> {
  items: T[];
  total: number;
}

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
}

/**
 * A console page that is one server-paged table: header with refresh, a notice, the table (its own
 * loading, empty and error states), paging in the URL.
 */
export function PagedListPage<T extends object, P extends ListPage<T>>({ queryKey, queryFn, poll, notice, empty, unit, table, children }: PagedListPageProps<T, P>) {
  const { paging, set } = useUrlPaging();
  const list = useQuery({
    queryKey: queryKey(paging.page, paging.pageSize),
    queryFn: ({ signal }) => queryFn(paging, signal),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (poll && q.state.status !== 'error' && q.state.data?.items.some(poll.busy) ? poll.ms : false),
  });
  const data = list.data;
  const { title, description } = notice(data);

  return (
    <PageFrame extra={<Button icon={<ReloadOutlined />} onClick={() => void list.refetch()} loading={list.isFetching && !list.isPending} aria-label="刷新" />}>
      <Card>
        <Flex vertical gap={16}>
          <Alert type="info" showIcon title={title} description={description} />
          {list.isError && !data ? (
            <LoadError error={list.error} onRetry={() => void list.refetch()} />
          ) : (
            <Table<T>
              {...table}
              loading={list.isPending || (list.isFetching && list.isPlaceholderData)}
              dataSource={data?.items}
              tableLayout="fixed"
              locale={{
                emptyText: (
                  <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={empty.text}>
                    <Link to={empty.to}>
                      <Button type="primary">{empty.action}</Button>
                    </Link>
                  </Empty>
                ),
              }}
              pagination={{
                current: paging.page,
                pageSize: paging.pageSize,
                total: data?.total ?? 0,
                showSizeChanger: true,
                pageSizeOptions: PAGE_SIZES,
                showTotal: (t) => `共 ${t} ${unit}`,
                onChange: set,
              }}
            />
          )}
        </Flex>
      </Card>
      {children}
    </PageFrame>
  );
}
