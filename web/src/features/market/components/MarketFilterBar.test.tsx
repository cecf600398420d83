import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { catalogueServer, gpuTypes } from '../../../test/fixtures/catalogue';

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

describe('the GPU market’s model filter', () => {
  it('on a real host lists only the card types the host has (a type it lacks is no choice)', async () => {
    catalogueServer((url) =>
      url.pathname === '/upgpu/api/v2.1/gpu_type/list'
        ? json(200, { items: [gpuTypes[0], { ...gpuTypes[1], unavailable: '本主机没有 A100 80GB' }] })
        : undefined,
    );
    renderApp('/stats/cloud/gpu');
    const models = await screen.findByRole('radiogroup', { name: 'GPU 型号' });
    const labels = within(models)
      .getAllByRole('radio')
      .map((r) => r.closest('label')?.textContent);
    expect(labels).toEqual(['全部型号', 'RTX 4090']);
  });

  it('on a host without cards offers no model at all', async () => {
    catalogueServer((url) =>
      url.pathname === '/upgpu/api/v2.1/gpu_type/list' ? json(200, { items: gpuTypes.map((t) => ({ ...t, unavailable: `本主机没有 ${t.name}` })) }) : undefined,
    );
    renderApp('/stats/cloud/gpu');
    const models = await screen.findByRole('radiogroup', { name: 'GPU 型号' });
    expect(within(models).queryByText('RTX 4090')).toBeNull();
    expect(within(models).queryByText('A100 80GB')).toBeNull();
  });
});
