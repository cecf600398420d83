/**
 * Test wiring for the embedded sandbox gateway: its notifications travel through app.inject
 * instead of the network and are recorded, so a test can replay or tamper with them.
 */
import type { FastifyInstance } from 'fastify';
import { MemorySandboxStore, SandboxPaymentDriver, makePaymentDrivers, type PaymentDrivers } from '../src/drivers/payment/index.js';

export const BASE = 'http://console.test';

interface Delivery {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A sandbox gateway whose notifications travel through app.inject instead of the network, and are
 * recorded so a test can replay or tamper with them. `deliver=false` loses them, like a gateway
 * whose callbacks never arrive.
 */
export function sandboxWiring(clock: () => Date) {
  const keys = SandboxPaymentDriver.generateKeys();
  const sent: Delivery[] = [];
  const wiring = { app: null as FastifyInstance | null, deliver: true };
  const fakeFetch = (async (url: string | URL, init?: RequestInit) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const delivery = { url: String(url), headers, body: String(init?.body ?? '') };
    sent.push(delivery);
    if (!wiring.deliver) throw new Error('network unreachable');
    const res = await wiring.app!.inject({ method: 'POST', url: new URL(delivery.url).pathname, headers, payload: delivery.body });
    return new Response(res.body, { status: res.statusCode });
  }) as typeof fetch;
  const drivers: PaymentDrivers = makePaymentDrivers(
    { PAYMENT_DRIVER: 'sandbox', PUBLIC_BASE_URL: BASE },
    { now: clock, fetch: fakeFetch, sandbox: { store: new MemorySandboxStore(), gatewayKeys: keys, retryDelaysMs: [5, 10] } },
  );
  return { keys, sent, wiring, drivers };
}

export async function until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await probe();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
