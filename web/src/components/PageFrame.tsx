import type { ReactNode } from 'react';
import { Flex, Typography } from 'antd';
import { useRouteTitle } from '../routing/useRouteTitle';

/** The header every page shares: its title (from the route table unless given) and actions. */
export function PageFrame({ title, extra, children }: { title?: ReactNode; extra?: ReactNode; children: ReactNode }) {
  const routeTitle = useRouteTitle();
  return (
    <div style={{ padding: 24 }}>
      <Flex justify="space-between" align="center" style={{ marginBottom: 16 }}>
        <Typography.Title level={4} style={{ margin: 0 }}>
          {title ?? routeTitle}
        </Typography.Title>
        {extra}
      </Flex>
      {children}
    </div>
  );
}
