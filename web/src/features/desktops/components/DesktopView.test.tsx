import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor } from '@testing-library/react';
import { SOCKET_RESTART } from '@console/contract';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderWithProviders } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { ID, INSTANCES, instance, instanceServer } from '../../../test/fixtures/instances';
import { DesktopView } from './DesktopView';

/** The desktop's WebSocket, closed by the test as the server would. */
class FakeSocket extends EventTarget {
  static made: FakeSocket[] = [];
  binaryType = 'blob';
  constructor(readonly url: string) {
    super();
    FakeSocket.made.push(this);
  }
  close() {}
  /** The server closes the connection with `code`; noVNC (FakeRfb) hears of it after the socket's own listeners. */
  serverClose(code: number, reason = '') {
    this.dispatchEvent(Object.assign(new Event('close'), { code, reason }));
  }
}

/** noVNC's RFB: connects when told, says disconnected when its socket closes. */
vi.mock('@novnc/novnc', () => ({
  default: class FakeRfb extends EventTarget {
    scaleViewport = false;
    background = '';
    qualityLevel = 6;
    constructor(_target: HTMLElement, socket: FakeSocket) {
      super();
      socket.addEventListener('close', () => this.dispatchEvent(Object.assign(new Event('disconnect'), { detail: { clean: true } })));
      queueMicrotask(() => this.dispatchEvent(new Event('connect')));
    }
    disconnect() {}
  },
}));

beforeEach(() => {
  session.setLogin('tok', user);
  FakeSocket.made = [];
  vi.stubGlobal('WebSocket', FakeSocket);
});
afterEach(() => vi.unstubAllGlobals());

describe('云桌面 when the console restarts', { timeout: 30_000 }, () => {
  it('connects again by itself after a 1012 close, and stays 已断开 after any other close', async () => {
    const running = instance({ access: { ...instance().access!, desktop: true } });
    instanceServer((url) => (url.pathname === `${INSTANCES}/${ID}` ? json(200, running) : undefined));
    renderWithProviders(<DesktopView instanceId={ID} />);
    await waitFor(() => expect(screen.getByTestId('desktop-status').textContent).toBe('已连接'));
    expect(FakeSocket.made).toHaveLength(1);

    act(() => FakeSocket.made[0]!.serverClose(SOCKET_RESTART.code, SOCKET_RESTART.reason));
    expect(screen.getByTestId('desktop-status').textContent).toBe('重新连接中');
    expect(screen.getByText(/控制台服务正在重启，正在重新连接/)).toBeTruthy();
    await waitFor(() => expect(FakeSocket.made).toHaveLength(2), { timeout: 5000 });
    await waitFor(() => expect(screen.getByTestId('desktop-status').textContent).toBe('已连接'));

    // A close for another reason is left to the user (重新连接).
    act(() => FakeSocket.made[1]!.serverClose(1006));
    expect(screen.getByTestId('desktop-status').textContent).toBe('已断开');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(FakeSocket.made).toHaveLength(2);
  });
});
