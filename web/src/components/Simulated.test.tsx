import { beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, within } from '@testing-library/react';
import { session } from '../session/store';
import { fakeServer, json, type Handler } from '../test/http';
import { renderApp } from '../test/render';
import { user } from '../test/fixtures/user';
import { diffusionHandler, genImage, genTask } from '../test/fixtures/diffusion';
import { JOB_ID, loraJob, trainingHandler } from '../test/fixtures/training';

/** The site settings as a server with the embedded backends (or real ones) answers them. */
const settings =
  (simulated: { images: boolean; training: boolean }): Handler =>
  (url) =>
    url.pathname === '/api/v1/site/settings' ? json(200, { customerServiceUrl: null, simulated }) : undefined;

const done = genTask({ status: 'done', done: 1, batchCount: 1, images: [genImage()], finishedAt: '2026-11-25T08:01:00.000Z' });

beforeEach(() => session.setLogin('tok', user));

describe('outputs of the embedded image backend and trainer are labelled 模拟', () => {
  it('/sd/diffusion: the gallery and the finished task are marked, and the page says how to connect ComfyUI', async () => {
    fakeServer(settings({ images: true, training: true }), diffusionHandler({ tasks: [done], images: [genImage()] }));
    renderApp('/sd/diffusion');
    const notice = await screen.findByTestId('simulated-images');
    expect(notice.textContent).toContain('当前为模拟出图');
    expect(notice.textContent).toContain('COMFYUI_URL');
    const card = await screen.findByTestId('gallery-image');
    expect(within(card).getByText('模拟')).toBeTruthy();
    const finished = await screen.findByTestId('diffusion-finished');
    expect(within(finished).getAllByText('模拟').length).toBeGreaterThan(0);
  });

  it('/sd/diffusion with a real ComfyUI: no label, no notice', async () => {
    fakeServer(settings({ images: false, training: false }), diffusionHandler({ images: [genImage()] }));
    renderApp('/sd/diffusion');
    const card = await screen.findByTestId('gallery-image');
    expect(within(card).queryByText('模拟')).toBeNull();
    expect(screen.queryByTestId('simulated-images')).toBeNull();
  });

  it('/sd/train: each epoch’s sample is marked, and the page names TRAINER_DRIVER=kohya', async () => {
    vi.stubGlobal(
      'EventSource',
      class {
        close() {}
        addEventListener() {}
      },
    );
    fakeServer(settings({ images: true, training: true }), trainingHandler([loraJob()]));
    renderApp(`/sd/train?job=${JOB_ID}`);
    expect((await screen.findByTestId('simulated-training')).textContent).toContain('TRAINER_DRIVER=kohya');
    const epochs = await screen.findAllByTestId('train-epoch');
    for (const epoch of epochs) expect(within(epoch).getByText('模拟')).toBeTruthy();
  });
});
