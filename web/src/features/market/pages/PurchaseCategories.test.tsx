import { beforeEach, describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import type { User } from '@console/contract';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { catalogueServer } from '../../../test/fixtures/catalogue';
import { user } from '../../../test/fixtures/user';

const GPU_CARD = '/stats/purchase?hostId=h1&gpuTypeId=rtx4090&regionId=bj-b&roomId=bj-b-1&cycle=Hour&gpuCount=1';

function as(who: User) {
  session.setLogin('tok', who);
  return catalogueServer((url) => {
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, who);
    if (url.pathname === '/upgpu/api/v2.1/instances') return json(200, { items: [], total: 0, page: 1, pageSize: 10 });
    return undefined;
  });
}
const categoryNames = () =>
  within(screen.getByLabelText('产品类别'))
    .getAllByRole('radio')
    .map((r) => r.closest('label')!.textContent);

beforeEach(() => session.reload());

/** Spec §6 on the purchase page: a child is offered only the categories it may buy. */
describe('the purchase page’s categories', () => {
  it('a main account is offered every category', async () => {
    as(user);
    renderApp(GPU_CARD);
    await waitFor(() => expect(categoryNames()).toEqual(['GPU 实例', 'CPU 实例', '云桌面', '跨境电商', '云游戏']));
  });

  it('a child with createGPUInstance gets the GPU configurator only, even from a CPU link', async () => {
    as({ ...user, isChild: true, createGPUInstance: true });
    renderApp('/stats/purchase?category=Generic&regionId=bj-b&sizeId=gen-c2m4&cycle=Hour');
    // The GPU configurator (its GPU model choice) instead of the CPU sizes, and no category switch to other products.
    expect(await screen.findByText('RTX 4090')).toBeTruthy();
    expect(screen.queryByLabelText('产品类别')).toBeNull();
    expect(screen.queryByText('CPU 实例')).toBeNull();
  });

  it('a child that may only deploy applications is sent to pick an application first', async () => {
    as({ ...user, isChild: true, createImageAPP: true });
    renderApp(GPU_CARD);
    expect(await screen.findByText('子账号只能购买镜像应用')).toBeTruthy();
    expect(screen.getByRole('link', { name: /去选择应用/ }).getAttribute('href')).toBe('/stats/cloud/apply');
    expect(screen.queryByTestId('quote-total')).toBeNull();
  });
});
