/**
 * What the deployed test's "browser" does: JSON requests to HAProxy with a Bearer token, noting the
 * replica that answered (HAProxy's `x-replica`), and EventSource-like reading of a progress stream.
 */
import { API } from '@console/contract';
import type { ReplicaName } from './cluster.js';

export interface Answer<T = any> {
  status: number;
  body: T;
  text: string;
  replica: ReplicaName | null;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  raw?: Buffer;
}

export class Client {
  constructor(readonly base: string) {}

  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Buffer | undefined = opts.raw;
    if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    const res = await fetch(`${this.base}${path}`, { method, headers, body, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (a notification's 'success', an HTML page)
    }
    return { status: res.status, body: parsed as T, text, replica: res.headers.get('x-replica') as ReplicaName | null };
  }

  get = <T = any>(path: string, token?: string) => this.request<T>('GET', path, { token });
  post = <T = any>(path: string, body?: unknown, token?: string) => this.request<T>('POST', path, { body, token });

  /** Registers a new account the way the sign-up page does: a code by SMS (read from the outbox), then the form. */
  async register(
    mobile: string,
    password = 'Abcd1234',
  ): Promise<{ token: string; userId: string; mobile: string; password: string; replica: ReplicaName | null }> {
    const sent = await this.post(API.smsCode, { mobile, scene: 'register' });
    if (sent.status !== 200) throw new Error(`smscode ${sent.status}: ${sent.text}`);
    const outbox = await this.get<{ items: { code: string }[] }>(`/dev/outbox?to=${mobile}`);
    const res = await this.post<{ token: string; user: { id: string } }>(API.register, { mobile, code: outbox.body.items[0]!.code, password, agreed: true });
    if (res.status !== 200) throw new Error(`register ${res.status}: ${res.text}`);
    return { token: res.body.token, userId: res.body.user.id, mobile, password, replica: res.replica };
  }

  /** 实名认证 (the sandbox verifier): what datasets, training and GPU orders need. */
  async certify(token: string): Promise<void> {
    await this.post(API.certifyPersonal, { name: '张三丰', idNumber: '11010519491231002X' }, token);
    const done = await this.post(API.certifyPersonalConfirm, undefined, token);
    if (done.status !== 200) throw new Error(`certify ${done.status}: ${done.text}`);
  }

  /** Recharges `yuan` with Alipay: the order, 确认支付 on the sandbox scan page, then the recharge seen paid. */
  async recharge(token: string, yuan: string): Promise<{ id: string; outTradeNo: string }> {
    const r = await this.post<{ id: string; outTradeNo: string; qrContent: string }>(API.recharge, { amount: yuan, method: 'Alipay' }, token);
    if (r.status !== 200) throw new Error(`recharge ${r.status}: ${r.text}`);
    const paid = await this.post(`${new URL(r.body.qrContent).pathname}/pay`);
    if (paid.status !== 200) throw new Error(`pay ${paid.status}: ${paid.text}`);
    await this.until(
      () => this.get<{ status: string }>(API.rechargeOne.replace(':id', r.body.id), token),
      (a) => a.body.status === 'Paid',
      'the recharge to be paid',
    );
    return { id: r.body.id, outTradeNo: r.body.outTradeNo };
  }

  /** Asks again every 100 ms until `ok`, for at most `ms`. */
  async until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await probe();
      if (ok(v)) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v).slice(0, 300)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** GETs until one lands on `replica`: the next request then goes to the replica after it (round robin). */
  async landOn(replica: ReplicaName): Promise<void> {
    for (let i = 0; i < 10; i++) if ((await this.get('/livez')).replica === replica) return;
    throw new Error(`no request landed on ${replica}`);
  }
}

/** An open text/event-stream, read as an EventSource does: each `data:` event parsed, the end noticed. */
export class EventStream<T> {
  readonly events: T[] = [];
  ended = false;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly replica: ReplicaName | null,
    readonly status: number,
    private readonly abort: AbortController,
  ) {}

  static async open<T>(url: string, token: string): Promise<EventStream<T>> {
    const abort = new AbortController();
    const res = await fetch(url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, signal: abort.signal });
    const stream = new EventStream<T>(res.headers.get('x-replica') as ReplicaName | null, res.status, abort);
    void stream.read(res);
    return stream;
  }

  private async read(res: Response): Promise<void> {
    let text = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const event = text.slice(0, end);
          text = text.slice(end + 2);
          if (event.startsWith('data: ')) this.events.push(JSON.parse(event.slice(6)) as T);
          this.wake();
        }
      }
    } catch {
      // cut (a replica killed): the same as an end for an EventSource, which then reconnects
    }
    this.ended = true;
    this.wake();
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Until `ok` holds of the stream (its events, its end), for at most `ms`. */
  async until(ok: (s: EventStream<T>) => boolean, what: string, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ok(this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`stream: timed out waiting for ${what} (${this.events.length} events, ended: ${this.ended})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.abort.abort();
  }
}
