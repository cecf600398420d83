import { randomUUID } from 'node:crypto';
import type { RealNameCheck, RealNameDriver, RealNameVerdict } from './types.js';

/**
 * The embedded verifier. Like the real two-factor check it answers one of three ways — the name
 * matches the number, it does not, or the number is unknown — after a short round trip. Which
 * identities fail is configured (REALNAME_SANDBOX_REJECT: id numbers, or "name:id" pairs), so a
 * tester can walk both paths; every other well-formed identity matches.
 */
export class SandboxRealNameDriver implements RealNameDriver {
  readonly name = 'sandbox';
  private rejected: Set<string>;

  constructor(
    reject: string[],
    private latencyMs = 0,
  ) {
    this.rejected = new Set(reject.map((r) => r.trim().toUpperCase()).filter(Boolean));
  }

  async verify(check: RealNameCheck): Promise<RealNameVerdict> {
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    const ref = `sandbox-${randomUUID()}`;
    const id = check.idNumber.toUpperCase();
    if (this.rejected.has(`${check.name}:${id}`.toUpperCase())) return { outcome: 'mismatch', ref, reason: '姓名与身份证号不一致' };
    if (this.rejected.has(id)) return { outcome: 'no-record', ref, reason: '查无此身份证号' };
    return { outcome: 'match', ref };
  }
}
