/**
 * The frame the model gateway's suites share: a test server listening on a port (the official
 * `openai` client speaks HTTP), a client per key, cash credited as an operator would, and money read
 * only after the calls' settles (they run just after each answer went out). The ledger check after
 * each test is part of the frame.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { yuanToUnits } from '@console/contract';
import { checkLedger } from '../src/modules/ledger/index.js';
import { registerUser, startTestServer, type TestServer } from './harness.js';

export function modelSuite(env: Record<string, string>) {
  const kit = { s: undefined as unknown as TestServer, baseURL: '' };
  beforeAll(async () => {
    kit.s = await startTestServer({ env });
    await kit.s.app.listen({ port: 0, host: '127.0.0.1' });
    kit.baseURL = `http://127.0.0.1:${(kit.s.app.server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => kit.s.close());
  afterEach(async () => {
    await kit.s.ctx.modelGateway.drain();
    expect((await checkLedger(kit.s.ctx.db)).problems).toEqual([]);
  });

  const settled = () => kit.s.ctx.modelGateway.drain();
  async function fund(userId: string, yuan: string) {
    await kit.s.ctx.ledger.post({
      key: `fund-${randomUUID()}`,
      kind: 'compensation',
      legs: [
        { account: { platform: 'compensation' }, amount: -yuanToUnits(yuan) },
        { account: { userId, kind: 'cash' }, amount: yuanToUnits(yuan) },
      ],
    });
  }
  return {
    server: () => kit.s,
    /** The gateway's base URL (…/v1). */
    baseURL: () => kit.baseURL,
    client: (apiKey: string) => new OpenAI({ apiKey, baseURL: kit.baseURL, maxRetries: 0 }),
    /** Waits for every settle started so far: read money or call rows only after it. */
    settled,
    cash: async (userId: string) => {
      await settled();
      return (await kit.s.ctx.ledger.balances(userId)).cash;
    },
    fund,
    /** A new account with this much cash. */
    fundedUser: async (yuan: string) => {
      const u = await registerUser(kit.s);
      if (yuan !== '0') await fund(u.user.id, yuan);
      return u;
    },
    /** The OpenAI-shaped error a call was refused with, and its status. */
    failure: async (p: Promise<unknown>): Promise<{ status: number; code: string; message: string; param?: string | null; type: string }> => {
      const e = await p.then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(OpenAI.APIError);
      const err = e as InstanceType<typeof OpenAI.APIError>;
      return { status: err.status!, ...(err.error as { code: string; message: string; param?: string | null; type: string }) };
    },
  };
}
