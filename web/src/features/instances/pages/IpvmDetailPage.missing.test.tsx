import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen } from '@testing-library/react';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, instance, INSTANCES, instanceServer } from '../../../test/fixtures/instances';

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

const WHY =
  '该实例的镜像没有 Jupyter Notebook（python3 的 notebook 模块），无法打开 JupyterLab；本主机带 Notebook 的镜像：Debian 12 · Python 3.11（console/base:12），请用其创建实例';

describe('an instance whose image lacks the notebook', () => {
  it('access tab: says why and which image has one in JupyterLab’s place, with no link', async () => {
    const access = { ...instance().access!, jupyterUrl: null, missing: { jupyter: WHY } };
    instanceServer((url) => (url.pathname === `${INSTANCES}/${ID}` ? json(200, instance({ access })) : undefined));
    renderApp(`/console/ipvm/detail/Gpu/${ID}?tab=access`);
    expect(await screen.findByText(WHY)).toBeTruthy();
    expect(screen.queryByText('打开 JupyterLab')).toBeNull();
  });
});
