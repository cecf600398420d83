import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { calls, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { order } from '../../../test/fixtures/cost';
import { call, callPage, CALLS, stats, STATS, sum, usageServer } from '../../../test/fixtures/modelStats';

/** Beijing noon, 2026-11-25. */
const NOW = new Date('2026-11-25T04:00:00.000Z');
const DAY_SUM = sum({ requests: 25, failed: 1, promptTokens: 30000, completionTokens: 7000, packageTokens: 20000, cost: '56789' });

const query = (u: URL) => Object.fromEntries(u.searchParams);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
  session.setLogin('tok', user);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('the model bill of a day', () => {
  it('shows the day’s sums, each model’s part and the calls behind the charge, page by page', async () => {
    const fetch = usageServer((url) => {
      if (url.pathname === CALLS) {
        const page = url.searchParams.get('page');
        const items =
          page === '3' ? [call({ id: 'c21', model: 'deepseek-v3', keyName: '测试密钥' })] : [call(), call({ id: 'c2', packageTokens: 1500, cost: '0' })];
        return json(200, callPage(items, url, DAY_SUM, 25));
      }
      if (url.pathname === STATS) {
        return json(
          200,
          stats(
            '2026-11-25',
            '2026-11-25',
            { '2026-11-25': DAY_SUM },
            {
              models: [
                { model: 'qwen-plus', ...sum({ requests: 20, promptTokens: 25000, completionTokens: 6000, packageTokens: 20000, cost: '50000' }) },
                { model: 'deepseek-v3', ...sum({ requests: 5, failed: 1, promptTokens: 5000, completionTokens: 1000, cost: '6789' }) },
              ],
            },
          ),
        );
      }
      return undefined;
    });
    renderApp('/console/cost/bill/model-details/20261125');

    expect(await screen.findByText('模型调用账单 · 2026-11-25')).toBeTruthy();
    const cards = screen.getByLabelText('用量汇总');
    await waitFor(() => expect(within(cards).getByText('¥5.6789')).toBeTruthy());
    expect(within(cards).getByText('25')).toBeTruthy();
    expect(within(cards).getByText('30,000')).toBeTruthy();
    expect(within(cards).getByText('20,000')).toBeTruthy();
    expect(calls(fetch, CALLS).map(query)).toEqual([{ date: '2026-11-25', page: '1', pageSize: '10' }]);
    expect(calls(fetch, STATS).map(query)).toEqual([{ from: '2026-11-25', to: '2026-11-25' }]);

    const models = screen.getByLabelText('按模型汇总');
    const qwen = within(models).getByText('qwen-plus').closest('tr')!;
    expect(within(qwen).getByText('5.00')).toBeTruthy();
    expect(within(within(models).getByText('deepseek-v3').closest('tr')!).getByText('0.6789')).toBeTruthy();

    const log = screen.getByLabelText('调用明细');
    expect(within(log).getAllByText('生产环境')).toHaveLength(2);
    expect(within(log).getByText('1,500')).toBeTruthy(); // tokens a Token 包 paid for
    expect(screen.getByText('共 25 次调用 · 金额单位：元')).toBeTruthy();
    fireEvent.click(screen.getByTitle('3'));
    expect(await within(log).findByText('测试密钥')).toBeTruthy();
    expect(query(calls(fetch, CALLS).at(-1)!)).toEqual({ date: '2026-11-25', page: '3', pageSize: '10' });
    expect(screen.getByText('返回账单').closest('a')!.getAttribute('href')).toBe('/console/cost/bill?tab=usage');
  });

  it('past the call log’s retention still shows the day’s sums from the stats, and says why no calls are listed', async () => {
    usageServer((url) => {
      if (url.pathname === CALLS) return json(200, callPage([], url, sum({}), 0));
      if (url.pathname === STATS) return json(200, stats('2026-09-01', '2026-09-01', { '2026-09-01': DAY_SUM }));
      return undefined;
    });
    renderApp('/console/cost/bill/model-details/20260901');
    expect(await screen.findByText('该日的调用明细已超过保留期（30 天）被清理，以上汇总来自长期保留的统计数据。')).toBeTruthy();
    expect(within(screen.getByLabelText('用量汇总')).getByText('¥5.6789')).toBeTruthy();
    expect(screen.getByText('该日的调用明细已清理')).toBeTruthy();
  });

  it('when the call log cannot be read, sums the day from the stats and offers to load the calls again', async () => {
    let fail = true;
    usageServer((url) => {
      if (url.pathname === CALLS) return fail ? json(500, { code: 50000001, message: '服务器内部错误' }) : json(200, callPage([call()], url, DAY_SUM, 25));
      if (url.pathname === STATS) return json(200, stats('2026-11-25', '2026-11-25', { '2026-11-25': DAY_SUM }));
      return undefined;
    });
    renderApp('/console/cost/bill/model-details/20261125');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    expect(within(screen.getByLabelText('用量汇总')).getByText('¥5.6789')).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByText('重试'));
    expect(await screen.findByText('生产环境')).toBeTruthy();
  });

  it('refuses a day that does not exist or has not come yet, without asking the server', async () => {
    const fetch = usageServer(() => undefined);
    renderApp('/console/cost/bill/model-details/20261131');
    expect(await screen.findByText('账单不存在')).toBeTruthy();
    expect(screen.getByText(/20261131 不是有效的账单日期/)).toBeTruthy();
    expect(calls(fetch, CALLS)).toHaveLength(0);
  });

  it('still shows a Token 包 order for an order number', async () => {
    const uid = 'O20261123085616aaaa0001';
    const fetch = usageServer((url) => (url.pathname === `/order/api/v2.1/tiio/resource/${uid}` ? json(200, order({ status: 'Success' })) : undefined));
    renderApp(`/console/cost/bill/model-details/${uid}`);
    expect(await screen.findByText('大模型 Token 包 1000 万 × 1（¥50.00）')).toBeTruthy();
    expect(screen.getByText('已完成', { selector: '.ant-tag' })).toBeTruthy();
    expect(calls(fetch, CALLS)).toHaveLength(0);
    expect(calls(fetch, STATS)).toHaveLength(0);
  });
});

describe('the bill page’s 模型调用账单', () => {
  it('lists the last 30 days with calls, newest first, each linking to the bill of that day', async () => {
    const fetch = usageServer((url) => {
      if (url.pathname === STATS) {
        return json(
          200,
          stats(url.searchParams.get('from')!, url.searchParams.get('to')!, {
            '2026-11-03': { requests: 4, promptTokens: 900, completionTokens: 100, cost: '2000' },
            '2026-11-25': DAY_SUM,
          }),
        );
      }
      if (url.pathname === CALLS) return json(200, callPage([call()], url, DAY_SUM, 25));
      return undefined;
    });
    const router = renderApp('/console/cost/bill');
    await screen.findByText('服务器账单');
    fireEvent.click(screen.getAllByText('模型调用账单').find((e) => e.closest('.ant-tabs-tab'))!);

    const table = await screen.findByLabelText('每日模型调用账单');
    await waitFor(() => expect(table.querySelectorAll('tbody tr.ant-table-row')).toHaveLength(2));
    expect(calls(fetch, STATS).map(query)).toEqual([{ from: '2026-10-27', to: '2026-11-25' }]);
    expect(new URLSearchParams(router.state.location.search).get('tab')).toBe('usage');
    const rows = [...table.querySelectorAll<HTMLElement>('tbody tr.ant-table-row')];
    expect(rows.map((r) => r.querySelector('td')!.textContent)).toEqual(['2026-11-25', '2026-11-03']);
    const latest = rows[0]!;
    expect(within(latest).getByText('25')).toBeTruthy();
    expect(within(latest).getByText('37,000')).toBeTruthy(); // input + output
    expect(within(latest).getByText('20,000')).toBeTruthy();
    expect(within(latest).getByText('5.6789')).toBeTruthy();
    expect(within(rows[1]!).getByText('--')).toBeTruthy(); // nothing paid by a Token 包

    const details = within(latest).getByText('详情');
    expect(details.closest('a')!.getAttribute('href')).toBe('/console/cost/bill/model-details/20261125');
    fireEvent.click(details);
    expect(await screen.findByText('模型调用账单 · 2026-11-25')).toBeTruthy();
  });

  it('says when the last 30 days had no calls', async () => {
    usageServer((url) => (url.pathname === STATS ? json(200, stats(url.searchParams.get('from')!, url.searchParams.get('to')!)) : undefined));
    renderApp('/console/cost/bill?tab=usage');
    expect(await screen.findByText('近 30 天没有模型调用账单')).toBeTruthy();
  });
});
