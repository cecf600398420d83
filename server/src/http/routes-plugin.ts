import type { FastifyInstance } from 'fastify';

/**
 * A module's routes, bound to what they use: the module's wiring function (`modules/<name>/module.ts`) returns one,
 * the composition root (context.ts) collects them, app.ts registers each in a scope of its own.
 */
export type RoutesPlugin = (app: FastifyInstance) => Promise<void>;
