import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen } from '@testing-library/react';
import { API, PAGE, type FileStoreListing } from '@console/contract';
import { session } from '../../../session/store';
import { json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const listing = (over: Partial<FileStoreListing>): FileStoreListing => ({
  path: '/',
  entries: [{ name: 'a.txt', path: '/a.txt', dir: false, size: 3, modifiedAt: '2026-11-28T08:00:00.000Z' }],
  usedBytes: 3,
  quotaBytes: 20 * 1024 ** 3,
  ...over,
});

const serve = (body: FileStoreListing) => costServer((url) => (url.pathname === API.fileStore ? json(200, body) : undefined));

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('文件存储', () => {
  it('says when a folder holds more than a listing shows, and how to see the rest', async () => {
    serve(listing({ truncated: true }));
    renderApp(PAGE.gpudataFiles);
    expect(await screen.findByText('这个文件夹的项目太多，这里只列出前 1 项')).toBeTruthy();
    expect(screen.getByText(/在实例的终端中进入 \/root\/shared/)).toBeTruthy();
  });

  it('shows no such notice for a folder listed whole', async () => {
    serve(listing({}));
    renderApp(PAGE.gpudataFiles);
    expect(await screen.findByText('a.txt')).toBeTruthy();
    expect(screen.queryByText(/项目太多/)).toBeNull();
  });
});
