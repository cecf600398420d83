import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
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

/**
 * The tests render without antd's CSS-in-JS (zeroRuntime, test/render.tsx). What its stylesheet hides must stay
 * hidden for the role queries (an expand button kept for alignment, a closed dropdown's items): the display and
 * visibility declarations of antd's own static stylesheet, in its order, outside @media as jsdom reads them.
 */
function antdVisibilityRules(): string {
  const antdRoot = path.dirname(path.dirname(createRequire(import.meta.url).resolve('antd')));
  const css = readFileSync(path.join(antdRoot, 'dist/antd.css'), 'utf8');
  const rules: string[] = [];
  let at = 0;
  while (at < css.length) {
    const open = css.indexOf('{', at);
    if (open < 0) break;
    const selector = css.slice(at, open).trim();
    if (selector.startsWith('@')) {
      at = blockEnd(css, open);
      continue;
    }
    const close = css.indexOf('}', open);
    at = close + 1;
    const declarations = css
      .slice(open + 1, close)
      .split(';')
      .filter((d) => /^\s*(display|visibility)\s*:/.test(d));
    // A pseudo-element's style is never an element's own.
    const selectors = selector.split(',').filter((sel) => !sel.includes('::'));
    if (declarations.length > 0 && selectors.length > 0) rules.push(`${selectors.join(',')}{${declarations.join(';')}}`);
  }
  return rules.join('\n');
}

/** The index just past the block that opens at `open`, nested blocks included. */
function blockEnd(css: string, open: number): number {
  let depth = 0;
  for (let i = open; i < css.length; i++) {
    if (css[i] === '{') depth += 1;
    else if (css[i] === '}' && --depth === 0) return i + 1;
  }
  return css.length;
}

const visibility = document.createElement('style');
visibility.textContent = antdVisibilityRules();
document.head.appendChild(visibility);

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
