import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { calls, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { call, callPage, CALLS, KEY_ID, stats, STATS, sum, usageServer } from '../../../test/fixtures/modelStats';

/** Beijing noon, 2026-11-25. */
const NOW = new Date('2026-11-25T04:00:00.000Z');

const used = {
  '2026-11-24': { requests: 1, promptTokens: 800, completionTokens: 200, cost: '4000' },
  '2026-11-25': { requests: 2, failed: 1, promptTokens: 2200, completionTokens: 500, packageTokens: 1000, cost: '8345' },
};
const okCall = call();
const failed = call({
  id: 'c2',
  model: 'deepseek-v3',
  keyId: 'playground',
  keyName: '',
  promptTokens: 0,
  completionTokens: 0,
  cost: '0',
  latencyMs: 12300,
  status: 'error',
  error: '上游模型超时，本次调用不收费',
});

/** The query of the last request to `path`, as an object. */
const lastQuery = (fetch: ReturnType<typeof usageServer>, path: string) => Object.fromEntries(calls(fetch, path).at(-1)!.searchParams);

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByLabelText(label));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

function server(
  statsOf = (from: string, to: string) =>
    stats(from, to, used, {
      models: [
        { model: 'qwen-plus', ...sum({ requests: 2, promptTokens: 2000, completionTokens: 500, cost: '12345' }) },
        { model: 'deepseek-v3', ...sum({ requests: 1, failed: 1, promptTokens: 1000, completionTokens: 200 }) },
      ],
      keys: [{ keyId: KEY_ID, keyName: '生产环境', ...sum({ requests: 3, promptTokens: 3000, completionTokens: 700, cost: '12345' }) }],
    }),
) {
  return usageServer((url) => {
    if (url.pathname === STATS) return json(200, statsOf(url.searchParams.get('from')!, url.searchParams.get('to')!));
    if (url.pathname === CALLS)
      return json(200, callPage([okCall, failed], url, sum({ requests: 2, promptTokens: 1200, completionTokens: 300, cost: '12345' })));
    return undefined;
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
  session.setLogin('tok', user);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('the usage stats page', () => {
  it('asks for the last 7 Beijing days and shows their sums, the per-day table and the call log', async () => {
    const fetch = server();
    renderApp('/model/stats');

    const cards = await screen.findByLabelText('用量汇总');
    await waitFor(() => expect(within(cards).getByText('¥1.2345')).toBeTruthy());
    expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-19', to: '2026-11-25' });
    const card = (title: string) => within(cards).getByText(title).closest<HTMLElement>('.ant-card')!;
    expect(within(card('请求数')).getByText('3')).toBeTruthy();
    expect(within(card('请求数')).getByText('其中失败 1 次（不计费）')).toBeTruthy();
    expect(within(card('输入 Token')).getByText('3,000')).toBeTruthy();
    expect(within(card('输出 Token')).getByText('700')).toBeTruthy();
    expect(within(card('资源包抵扣 Token')).getByText('1,000')).toBeTruthy();

    // Only the days with calls, newest first, each with a link to its bill.
    const dayRows = screen.getByLabelText('按天汇总').querySelectorAll('tbody tr.ant-table-row');
    expect([...dayRows].map((r) => r.querySelector('td')!.textContent)).toEqual(['2026-11-25', '2026-11-24']);
    expect(
      within(dayRows[0] as HTMLElement)
        .getByText('当日账单')
        .closest('a')!
        .getAttribute('href'),
    ).toBe('/console/cost/bill/model-details/20261125');

    const log = screen.getByLabelText('调用明细');
    const okRow = (await within(log).findByText('生产环境')).closest('tr')!;
    expect(within(okRow).getByText('2026-11-25 10:30:05')).toBeTruthy(); // Beijing time
    expect(within(okRow).getByText('1,200 / 300')).toBeTruthy();
    expect(within(okRow).getByText('1.2345')).toBeTruthy();
    expect(within(okRow).getByText('850 ms')).toBeTruthy();
    expect(within(okRow).getByText('成功')).toBeTruthy();
    const failedRow = within(log).getByText('上游模型超时，本次调用不收费').closest('tr')!;
    expect(within(failedRow).getByText('在线体验')).toBeTruthy();
    expect(within(failedRow).getByText('失败')).toBeTruthy();
    expect(within(failedRow).getByText('12.3 s')).toBeTruthy();
    // 错误信息 is shown whole (not cut to an ellipsis), and the columns fit the table's width: a narrow window scrolls it.
    expect(within(failedRow).getByText('上游模型超时，本次调用不收费').className).not.toContain('ellipsis');
    const table = log.tagName === 'TABLE' ? log : log.querySelector('table')!;
    const widths = [...table.querySelectorAll('colgroup col')].map((c) => parseInt((c as HTMLElement).style.width, 10) || 0);
    expect(widths.length).toBeGreaterThan(0);
    expect(parseInt(table.style.width, 10) || Infinity).toBeGreaterThanOrEqual(widths.reduce((n, w) => n + w, 0));
    expect(screen.getByText('调用明细保留 30 天，统计数据长期保留')).toBeTruthy();
    expect(lastQuery(fetch, CALLS)).toEqual({ page: '1', pageSize: '10' });
  });

  it('asks again for another range, a model or a key, and keeps the choice in the URL', async () => {
    const fetch = server();
    const router = renderApp('/model/stats');
    await screen.findByText('¥1.2345');

    fireEvent.click(screen.getByText('近 30 天'));
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-10-27', to: '2026-11-25' }));
    fireEvent.click(screen.getByText('今天'));
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-25', to: '2026-11-25' }));
    expect(new URLSearchParams(router.state.location.search).get('range')).toBe('today');

    await pick('模型', 'DeepSeek V3（deepseek-v3）');
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-25', to: '2026-11-25', model: 'deepseek-v3' }));
    await waitFor(() => expect(lastQuery(fetch, CALLS)).toEqual({ page: '1', pageSize: '10', model: 'deepseek-v3' }));

    await pick('密钥', '在线体验');
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-25', to: '2026-11-25', model: 'deepseek-v3', keyId: 'playground' }));
    await waitFor(() => expect(lastQuery(fetch, CALLS)).toEqual({ page: '1', pageSize: '10', model: 'deepseek-v3', keyId: 'playground' }));
    expect(new URLSearchParams(router.state.location.search).get('keyId')).toBe('playground');

    fireEvent.click(screen.getByText('清除筛选'));
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-25', to: '2026-11-25' }));
  });

  it('reads a custom range from the URL; a day of the per-day table shows only that day in the call log', async () => {
    const fetch = server();
    renderApp('/model/stats?range=custom&from=2026-11-20&to=2026-11-25&tab=day');
    await screen.findByText('¥1.2345');
    expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-20', to: '2026-11-25' });

    const row = screen.getByText('2026-11-24', { selector: 'td' }).closest('tr')!;
    fireEvent.click(within(row).getByText('调用明细'));
    await waitFor(() => expect(lastQuery(fetch, CALLS)).toEqual({ page: '1', pageSize: '10', date: '2026-11-24' }));
  });

  it('per model: 只看此模型 filters the page by that model', async () => {
    const fetch = server();
    renderApp('/model/stats?tab=model');
    const table = await screen.findByLabelText('按模型汇总');
    const row = within(table).getByText('deepseek-v3').closest('tr')!;
    fireEvent.click(within(row).getByText('只看此模型'));
    await waitFor(() => expect(lastQuery(fetch, STATS)).toEqual({ from: '2026-11-19', to: '2026-11-25', model: 'deepseek-v3' }));
  });

  it('says when the range has no calls and where calls come from', async () => {
    usageServer((url) => {
      if (url.pathname === STATS) return json(200, stats(url.searchParams.get('from')!, url.searchParams.get('to')!));
      if (url.pathname === CALLS) return json(200, callPage([], url, sum({})));
      return undefined;
    });
    renderApp('/model/stats');
    expect(await screen.findByText('所选时间内没有调用记录')).toBeTruthy();
    expect(screen.getAllByText('在线体验', { selector: 'a' })[0]!.getAttribute('href')).toBe('/model/experience');
    expect(screen.getAllByText('API KEY', { selector: 'a' })[0]!.getAttribute('href')).toBe('/model/key');
    expect(screen.queryByLabelText('用量汇总')).toBeNull();
  });

  it('shows a failed load with a retry that asks again', async () => {
    let fail = true;
    const fetch = usageServer((url) => {
      if (url.pathname === STATS) return fail ? json(500, { code: 50000001, message: '服务器内部错误' }) : json(200, stats('2026-11-19', '2026-11-25', used));
      if (url.pathname === CALLS) return json(200, callPage([], url, sum({})));
      return undefined;
    });
    renderApp('/model/stats');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByText('重试'));
    expect(await screen.findByText('¥1.2345')).toBeTruthy();
    expect(calls(fetch, STATS)).toHaveLength(2);
  });
});
