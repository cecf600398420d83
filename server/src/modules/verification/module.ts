/** The verification module's wiring: the codes service and the routes that send codes, from only what they use. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { verificationRoutes, type CodeRecipients } from './routes.js';
import { VerificationService } from './service.js';

type ServiceDeps = ConstructorParameters<typeof VerificationService>[0];

export interface VerificationModuleDeps extends ServiceDeps {
  auth: AuthGuards;
  /**
   * The account checks before a code goes out. The users module checks codes, so it is built after this one:
   * its checks are asked for when the routes are registered, once the whole server is composed.
   */
  recipients: () => CodeRecipients;
  devTools: boolean;
}

export function verificationModule(deps: VerificationModuleDeps) {
  const { auth, recipients, devTools, ...serviceDeps } = deps;
  const codes = new VerificationService(serviceDeps);
  const routes: RoutesPlugin = async (app) =>
    verificationRoutes(app, { auth, codes, users: recipients(), db: deps.db, sms: deps.sms, mail: deps.mail, devTools });
  return { codes, routes };
}
