import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { calls } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';
import { computeHandler, GEN_TASK_ID, HOURS_ID, hoursPkg, INSTANCE_ID, usagesPath } from '../../../test/fixtures/compute';
import { JOB_ID } from '../../../test/fixtures/training';

const href = (el: HTMLElement) => el.closest('a')!.getAttribute('href');
const rowOf = (text: string) => screen.getByText(text).closest('tr')!;

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the package detail page', () => {
  it('shows the package and what it paid for, each with its label and a way to it', async () => {
    const fetch = costServer(computeHandler());
    renderApp(`/compute/detail?id=${HOURS_ID}`);

    const facts = (await screen.findByText('订单号')).closest<HTMLElement>('.ant-descriptions')!;
    expect(within(facts).getByText('37.5 卡时')).toBeTruthy();
    expect(within(facts).getByText('100 卡时')).toBeTruthy();
    expect(within(facts).getByLabelText('剩余 37.5%')).toBeTruthy();
    expect(await within(facts).findByText('RTX 4090')).toBeTruthy();
    expect(href(within(facts).getByText(hoursPkg.orderUid))).toBe(`/console/cost/bill/model-details/${hoursPkg.orderUid}`);
    expect(within(facts).getByText('2026-11-23 16:57:15')).toBeTruthy(); // bought, Beijing time

    await screen.findByText('查看训练任务');
    const train = rowOf('LoRA 训练');
    expect(within(train).getByText('2026-11-25 16:10:00')).toBeTruthy();
    expect(href(within(train).getByText('查看训练任务'))).toBe(`/sd/train?job=${JOB_ID}`);
    expect(within(train).getByText('0.1708 卡时')).toBeTruthy();
    const gen = rowOf('AI 绘图');
    expect(href(within(gen).getByText('查看 AI 绘图'))).toBe('/sd/diffusion');
    expect(within(gen).getByText(GEN_TASK_ID)).toBeTruthy();
    expect(within(gen).getByText('0.0125 卡时')).toBeTruthy();
    const instance = rowOf('实例按量运行');
    expect(href(within(instance).getByText('查看实例'))).toBe(`/console/ipvm/detail/Gpu/${INSTANCE_ID}`);
    expect(within(instance).getByText('2 卡时')).toBeTruthy();
    expect(screen.getByText('共 3 条')).toBeTruthy();

    const asked = calls(fetch, usagesPath(HOURS_ID));
    expect(asked[0]!.searchParams.get('page')).toBe('1');
    expect(asked[0]!.searchParams.get('pageSize')).toBe('10');
  });

  it('a package that is not the account’s: not found, with the way back', async () => {
    const other = '0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a';
    costServer(computeHandler());
    renderApp(`/compute/detail?id=${other}`);
    expect(await screen.findByText('资源包不存在')).toBeTruthy();
    expect(screen.getByText(`没有找到资源包 ${other}，它可能不属于当前账号。`)).toBeTruthy();
  });

  it('no id: says what is missing and links back to 我的算力', async () => {
    costServer(computeHandler());
    renderApp('/compute/detail');
    expect(await screen.findByText('未指定资源包')).toBeTruthy();
    expect(screen.getAllByText('返回我的算力').map(href)).toContain('/compute/center?tab=mine');
  });
});
