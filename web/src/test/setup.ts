import { afterAll, afterEach } from 'vitest';
import { cleanup, configure } from '@testing-library/react';
import { message, Modal, notification } from 'antd';

// The first render of a lazy page transforms antd on the fly, and a machine busy with other suites
// (CI runs them side by side with the server's) is slow to paint: allow for both.
configure({ asyncUtilTimeout: 10_000 });

// jsdom lacks the browser APIs antd's responsive components read on mount.
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => undefined,
      removeListener: () => undefined,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
      dispatchEvent: () => false,
    }) as MediaQueryList;
}
if (!('ResizeObserver' in window)) {
  (window as unknown as { ResizeObserver: unknown }).ResizeObserver = class {
    observe() {}
    unobserve() {}
    disconnect() {}
  };
}
// jsdom prints "Not implemented" for pseudo-element styles that antd asks about; ignore the argument.
const getComputedStyle = window.getComputedStyle.bind(window);
window.getComputedStyle = (elt: Element) => getComputedStyle(elt);

afterEach(() => {
  cleanup();
  // antd's static message/modal render in roots of their own that cleanup() does not unmount.
  message.destroy();
  notification.destroy();
  Modal.destroyAll();
  localStorage.clear();
  sessionStorage.clear();
});

// React finishes scheduled work on a later tick: let it run while the test file's window still exists.
afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 100));
});
