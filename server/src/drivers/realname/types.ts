/**
 * Real-name verification (实名核验): does this name belong to this resident identity number?
 * The embedded sandbox answers like the real service does; production asks Alibaba Cloud's
 * identity two-factor check (身份二要素核验, cloudauth Id2MetaVerify).
 */
export interface RealNameCheck {
  name: string;
  idNumber: string;
}

export type RealNameVerdict = { outcome: 'match'; ref: string } | { outcome: 'mismatch' | 'no-record'; ref: string; reason: string };

export interface RealNameDriver {
  readonly name: string;
  /** Throws when the service cannot be reached or refuses the call (nothing is decided then). */
  verify(check: RealNameCheck): Promise<RealNameVerdict>;
}
