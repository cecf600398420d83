import type { FileStoreMount } from '../../drivers/compute/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { fileStoreRoutes } from './routes.js';
import { FileStore } from './store.js';

export interface FileStoreModuleDeps {
  auth: AuthGuards;
  /** The trees the compute driver's machines mount (its `fileStore`); absent: there is no 文件存储. */
  mount: FileStoreMount | undefined;
}

/** 文件存储: the account's tree, browsed from the console where the machines mount one. */
export function fileStoreModule(deps: FileStoreModuleDeps) {
  const { mount } = deps;
  const fileStore = mount
    ? new FileStore({ root: mount.root, quotaBytes: mount.quotaGb * 1024 ** 3, imageGb: mount.imageGb, hostUidOf: mount.hostUidOf })
    : null;
  const routes: RoutesPlugin = async (app) => fileStoreRoutes(app, { auth: deps.auth, fileStore });
  return { fileStore, routes };
}
