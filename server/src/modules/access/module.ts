import type { Clock } from '../../clock.js';
import type { Bus } from '../../db/bus.js';
import type { Db } from '../../db/client.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import type { EmbeddedComfyApps } from '../../drivers/image-backend/comfy-apps.js';
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import type { AppTokens, InstanceService, InstanceViews } from '../instances/index.js';
import type { ChildService, SessionService, UserService } from '../users/index.js';
import { AccessGate, type AccessGateDeps } from './gate.js';
import type { MachineOrigins } from './machine-origin.js';
import { machineDoorRoutes, machineProxyRoutes, type MachineProxyDeps } from './machine-proxy.js';
import { accessRoutes } from './routes.js';
import { SshKeyService } from './ssh-keys.js';
import { Terminals } from './terminal.js';
import { SharedShellSlots } from './terminal-slots.js';

export interface AccessModuleDeps {
  db: Db;
  clock: Clock;
  auth: AuthGuards;
  sessions: SessionService;
  users: Pick<UserService, 'findById'>;
  /** A child's rights changing ends its connections. */
  children: Pick<ChildService, 'onChange'>;
  instanceViews: Pick<InstanceViews, 'get'>;
  instances: Pick<InstanceService, 'accessOf'>;
  appTokens: Pick<AppTokens, 'admit' | 'onChange'>;
  driver: ComputeDriver;
  machineOrigins: MachineOrigins;
  comfyApps: EmbeddedComfyApps;
  publicBaseUrl: string;
  /** Carries the events that end connections to every replica. */
  bus: Pick<Bus, 'publish' | 'subscribe'>;
}

/** The bus channel of "something that may end connections into instances happened". */
export const ACCESS_CHANGED = 'access.changed';

/**
 * Ways into running instances: the web terminal, SSH keys, the desktop, and the machines' web pages.
 * `routes` go to the console's listener; `machineRoutes` to the machines' own (app.ts).
 */
export function accessModule(deps: AccessModuleDeps) {
  const { db, clock, auth, driver } = deps;
  const instanceOf: AccessGateDeps['instanceOf'] = (user, id) => deps.instanceViews.get(user, id);
  const { bus } = deps;
  const accessGate = new AccessGate({ sessions: deps.sessions, instanceOf, onChange: (listener) => bus.subscribe(ACCESS_CHANGED, listener) });
  const sshKeys = new SshKeyService({ db, clock, findUser: (id) => deps.users.findById(id), instanceOf });
  // Each user's shells counted on every replica together (terminal-slots.ts).
  const slots = new SharedShellSlots({
    db,
    clock,
    onError: (e) => terminals.log(`网页终端：终端记录读写失败（${(e as Error).message}），将在半分钟后自动失效`),
  });
  const terminals = new Terminals(driver, { slots });
  // Logging out, a child's rights changing and an API token replaced or revoked end the connections they opened at once,
  // on whichever replica they are connected to.
  const changed = () => bus.publish(ACCESS_CHANGED);
  deps.sessions.onRevoke(changed);
  deps.children.onChange(changed);
  deps.appTokens.onChange(changed);
  const proxy: MachineProxyDeps = {
    accessGate,
    machineOrigins: deps.machineOrigins,
    driver,
    instances: deps.instances,
    appTokens: deps.appTokens,
    comfyApps: deps.comfyApps,
    publicBaseUrl: deps.publicBaseUrl,
  };
  const routes: RoutesPlugin = async (app) => {
    await app.register(async (scope) => accessRoutes(scope, { auth, accessGate, terminals, sshKeys, driver }));
    // The machines' web services are served on their own listener (machineRoutes); here, the doors to them.
    await app.register(async (scope) => machineDoorRoutes(scope, proxy));
  };
  const machineRoutes: RoutesPlugin = async (app) => machineProxyRoutes(app, proxy);
  return { accessGate, terminals, sshKeys, routes, machineRoutes };
}
