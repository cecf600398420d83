import type { ReactNode } from 'react';
import { Flex, Typography } from 'antd';
import { useRouteTitle } from '../routing/useRouteTitle';

/**
 * The frame of the public catalogue pages: fluid below 1440 px, then widths that hold whole rows of
 * 270 px cards (styles.css .stats-container), with the page's title, a line about it and actions.
 */
export function PublicPage({ title, intro, extra, children }: { title?: ReactNode; intro?: ReactNode; extra?: ReactNode; children: ReactNode }) {
  const routeTitle = useRouteTitle();
  return (
    <div className="stats-container">
      <Flex justify="space-between" align="flex-end" gap={16} wrap className="stats-heading">
        <div>
          <Typography.Title level={3} style={{ margin: 0 }}>
            {title ?? routeTitle}
          </Typography.Title>
          {intro && (
            <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0' }}>
              {intro}
            </Typography.Paragraph>
          )}
        </div>
        {extra}
      </Flex>
      {children}
    </div>
  );
}
