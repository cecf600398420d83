/**
 * The compute drivers, by the name `COMPUTE_DRIVER` gives: a new driver is its own file and one line
 * here (its settings, if it has any, are validated in config.ts).
 */
import type { Clock } from '../../clock.js';
import type { Db } from '../../db/client.js';
import { AgentComputeDriver } from './agent.js';
import { SimulatedComputeDriver, parseSimDelays } from './simulated.js';
import type { ComputeDriver } from './types.js';

/** The settings the drivers read (config.ts validates them; named here so that config.ts can list the drivers). */
export interface ComputeDriverSettings {
  COMPUTE_SIM_DELAYS?: string;
  COMPUTE_SIM_DOMAIN: string;
  COMPUTE_AGENT_URL?: string;
  COMPUTE_AGENT_KEY_ID?: string;
  COMPUTE_AGENT_SECRET?: string;
}

export interface ComputeDriverDeps {
  config: ComputeDriverSettings;
  db: Db;
  clock: Clock;
}

export const COMPUTE_DRIVERS = {
  simulated: ({ config, db, clock }) => new SimulatedComputeDriver(db, clock, parseSimDelays(config.COMPUTE_SIM_DELAYS), config.COMPUTE_SIM_DOMAIN),
  agent: ({ config }) =>
    new AgentComputeDriver({ baseUrl: config.COMPUTE_AGENT_URL!, keyId: config.COMPUTE_AGENT_KEY_ID!, secret: config.COMPUTE_AGENT_SECRET! }),
} satisfies Record<string, (deps: ComputeDriverDeps) => ComputeDriver>;

export type ComputeDriverName = keyof typeof COMPUTE_DRIVERS;
export const COMPUTE_DRIVER_NAMES = Object.keys(COMPUTE_DRIVERS) as [ComputeDriverName, ...ComputeDriverName[]];

export function makeComputeDriver(name: ComputeDriverName, deps: ComputeDriverDeps): ComputeDriver {
  return COMPUTE_DRIVERS[name](deps);
}
