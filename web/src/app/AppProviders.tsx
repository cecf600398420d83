import type { ReactNode } from 'react';
import { App, ConfigProvider } from 'antd';
import zhCN from 'antd/locale/zh_CN';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import dayjs from 'dayjs';
import 'dayjs/locale/zh-cn';

dayjs.locale('zh-cn');

const PURPLE = '#722ED1';

/**
 * Purple primary colour (spec §1). antd's default theme uses one colour for primary, info and
 * links, so all three move together. Everything else stays antd's defaults, which match spec §9.
 */
export const THEME = { token: { colorPrimary: PURPLE, colorInfo: PURPLE, colorLink: PURPLE } };

export function AppProviders({ queryClient, children }: { queryClient: QueryClient; children: ReactNode }) {
  return (
    <ConfigProvider locale={zhCN} theme={THEME} button={{ autoInsertSpace: false }}>
      <App>
        <QueryClientProvider client={queryClient}>{children}</QueryClientProvider>
      </App>
    </ConfigProvider>
  );
}
