import type { ReactNode } from 'react';
import { Alert, Button, Empty, Flex, Table, type TableProps } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { keepPreviousData, useQuery, type QueryKey, type UseQueryResult } from '@tanstack/react-query';
import { nextPaging, PAGE_SIZES, type Paging } from '../routing/useUrlPaging';
import { LoadError } from './LoadError';

/** One page of a server-paged list (DESIGN.md: `{ items, total, page, pageSize }`). */
export interface ListPage<T> {
  items: T[];
  total: number;
}

/** One page of a server-paged list: the rows on screen stay until the next page arrives. */
export function usePagedQuery<P extends ListPage<unknown>>({
  queryKey,
  queryFn,
  refetchInterval,
}: {
  queryKey: QueryKey;
  queryFn: (signal: AbortSignal) => Promise<P>;
  /** Polling, from the page on screen and whether the last refresh failed. */
  refetchInterval?: (data: P | undefined, failed: boolean) => number | false;
}) {
  return useQuery({
    queryKey,
    queryFn: ({ signal }) => queryFn(signal),
    placeholderData: keepPreviousData,
    refetchInterval: refetchInterval && ((q) => refetchInterval(q.state.data, q.state.status === 'error')),
  });
}

export interface PagedTableProps<T extends object> extends Omit<TableProps<T>, 'dataSource' | 'loading' | 'pagination' | 'locale'> {
  list: UseQueryResult<ListPage<T>>;
  paging: Paging;
  /** The paging the user moved to (a new page size starts again at page 1). */
  onPage: (next: Paging) => void;
  /** The empty table: a sentence, or an Empty of the caller's with a way forward. */
  empty: ReactNode;
  /** What the rows are called after the total: `共 ${total} ${unit}`. */
  unit?: string;
  /** After the total, e.g. the unit of the amounts. */
  totalNote?: string;
  /** The page sizes offered; one size offers no choice. */
  sizes?: readonly number[];
}

/**
 * The frame of every server-paged table: the table's spinner while a page loads (the old rows stay
 * until the next page arrives), an empty state that says what is missing, a load error with a
 * retry, and a warning over the rows when a refresh fails.
 */
export function PagedTable<T extends object>({ list, paging, onPage, empty, unit = '条', totalNote, sizes = PAGE_SIZES, ...table }: PagedTableProps<T>) {
  if (list.isError && !list.data) return <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  return (
    <Flex vertical gap={12}>
      {list.isError && <StaleRowsWarning error={list.error} onRetry={() => void list.refetch()} />}
      <Table<T>
        tableLayout="fixed"
        {...table}
        loading={list.isPending || (list.isFetching && list.isPlaceholderData)}
        dataSource={list.data?.items}
        locale={{ emptyText: typeof empty === 'string' ? <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={empty} /> : empty }}
        pagination={{
          current: paging.page,
          pageSize: paging.pageSize,
          total: list.data?.total ?? 0,
          showSizeChanger: sizes.length > 1,
          pageSizeOptions: [...sizes],
          showTotal: (t) => `共 ${t} ${unit}${totalNote ? ` · ${totalNote}` : ''}`,
          onChange: (page, pageSize) => onPage(nextPaging(paging, page, pageSize)),
        }}
      />
    </Flex>
  );
}

/** The rows on screen are from before the failed refresh: say so rather than pass them off as current. */
function StaleRowsWarning({ error, onRetry }: { error: Error; onRetry: () => void }) {
  return (
    <Alert
      type="warning"
      showIcon
      title={`列表刷新失败：${error.message}`}
      action={
        <Button size="small" onClick={onRetry}>
          重试
        </Button>
      }
    />
  );
}

/** 刷新 for a list's header: spins while a refresh (not the first load) is under way. */
export function RefreshButton({ list }: { list: Pick<UseQueryResult, 'refetch' | 'isFetching' | 'isPending'> }) {
  return <Button icon={<ReloadOutlined />} onClick={() => void list.refetch()} loading={list.isFetching && !list.isPending} aria-label="刷新" />;
}
