import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { API } from '@console/contract';
import { get, json, post, registerUser, startTestServer } from '../../test/harness.js';
import { LOG_SERIALIZERS, redactToken } from './log.js';

describe('session tokens in URLs', () => {
  it('are never written to the request log', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = Fastify({ logger: { level: 'info', stream, serializers: LOG_SERIALIZERS } });
    app.get('/page', async () => ({ ok: true }));
    await app.inject({ url: '/page?from=x&token=eyJhbGciOiJkaXIi.secret&tab=2' });
    await app.close();
    const logged = lines.join('');
    expect(logged).toContain('/page?from=x&token=[已隐去]&tab=2');
    expect(logged).not.toContain('secret');
    expect(redactToken('/a?TOKEN=abc')).toBe('/a?TOKEN=[已隐去]');
    expect(redactToken('/_console/enter?ticket=eyJ.abc&x=1')).toBe('/_console/enter?ticket=[已隐去]&x=1');
  });

  it('open pages but change nothing: a state change needs the Authorization header', async () => {
    const s = await startTestServer();
    try {
      const u = await registerUser(s);
      expect((await s.app.inject({ url: `${API.meInfo}?token=${u.token}` })).statusCode).toBe(200);
      const viaQuery = await s.app.inject({ method: 'POST', url: `${API.logout}?token=${u.token}` });
      expect(viaQuery.statusCode).toBe(403);
      expect(json(viaQuery)).toMatchObject({ code: 40300001 });
      // The session was not ended by the refused request.
      expect((await get(s.app, API.meInfo, u.token)).statusCode).toBe(200);
      expect((await post(s.app, API.logout, undefined, u.token)).statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });
});
