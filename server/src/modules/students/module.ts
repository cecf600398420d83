/** The students module's wiring: student verification and its routes. */
import type { AuthGuards } from '../../http/auth.js';
import type { RoutesPlugin } from '../../http/routes-plugin.js';
import { studentRoutes } from './routes.js';
import { StudentService } from './service.js';

type ServiceDeps = ConstructorParameters<typeof StudentService>[0];

export interface StudentsModuleDeps extends ServiceDeps {
  auth: AuthGuards;
}

export function studentsModule(deps: StudentsModuleDeps) {
  const { auth, ...serviceDeps } = deps;
  const students = new StudentService(serviceDeps);
  const routes: RoutesPlugin = async (app) => studentRoutes(app, { auth, students });
  return { students, routes };
}
