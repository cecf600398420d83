/**
 * The market on a fleet whose hosts each report what they have (ComputeDriver.offerOf: the fleet
 * driver's agents): a catalogue host is sold only while its agent is registered, answering and
 * healthy, and never for more cards than the agent reports free. Without offerOf (the simulated
 * fleet, the one local host) the snapshot is the catalogue's own.
 */
import type { HostOffer } from '../../drivers/compute/types.js';
import { AppError } from '../../http/errors.js';
import { freeCardsOf, hostCardsOf, hostMarket } from './host-market.js';
import type { HostRow, Snapshot } from './store.js';

/** ComputeDriver.offerOf, as the market reads it. */
export type HostOfferOf = (hostId: string) => Promise<HostOffer | 'catalogue' | null>;

/** The hosts as the fleet's agents allow them: those not on sale dropped, the others' cards capped by their reports. */
export async function withReportedHosts(snap: Snapshot, offerOf: HostOfferOf | undefined): Promise<Snapshot> {
  if (!offerOf) return snap;
  const hosts = await Promise.all(snap.hosts.map((h) => reportedHost(snap, h, offerOf)));
  return { ...snap, hosts: hosts.filter((h): h is HostRow => h !== null) };
}

/**
 * The agents' reports as last read by the market (every GPU quote reads them all), for the order's
 * reservation: it runs inside a transaction, where reading the fleet's own tables could wait for the
 * connection that transaction holds.
 */
export class LastReports {
  private last = new Map<string, HostOffer | 'catalogue' | null>();
  constructor(private offerOf: HostOfferOf) {}

  readonly read: HostOfferOf = async (hostId) => {
    const offer = await this.offerOf(hostId);
    this.last.set(hostId, offer);
    return offer;
  };

  /** The last report read of the host; null (nothing sold) when none was read yet. */
  lastOf(hostId: string): HostOffer | 'catalogue' | null {
    return this.last.get(hostId) ?? null;
  }
}

/** Cards of `host` its agent last reported free (null: not on sale at all; Infinity: the catalogue describes the host). */
export function reportedFreeCards(snap: Snapshot, host: HostRow, reports: LastReports): number | null {
  const offer = reports.lastOf(host.id);
  if (offer === null) return null;
  if (offer === 'catalogue') return Infinity;
  return freeCardsOf(hostMarket(offer, snap.settings), typeOf(snap, host));
}

async function reportedHost(snap: Snapshot, h: HostRow, offerOf: HostOfferOf): Promise<HostRow | null> {
  const offer = await offerOf(h.id);
  if (offer === null) return null;
  if (offer === 'catalogue') return h;
  const market = hostMarket(offer, snap.settings);
  const type = typeOf(snap, h);
  return { ...h, gpuTotal: Math.min(h.gpuTotal, hostCardsOf(market, type)), gpuFree: Math.min(h.gpuFree, freeCardsOf(market, type)) };
}

function typeOf(snap: Snapshot, h: HostRow): { name: string; memoryGb: number } {
  return snap.gpuTypes.find((g) => g.id === h.gpuTypeId) ?? { name: h.gpuTypeId, memoryGb: 0 };
}

/** Refuses an order for a catalogue host its agent does not allow now, saying so (rather than that it does not exist). */
export function refuseHostInMaintenance(catalogue: Snapshot, reported: Snapshot, hostId: string): void {
  const host = catalogue.hosts.find((h) => h.id === hostId);
  if (host && !reported.hosts.some((h) => h.id === hostId)) throw new AppError('NO_CAPACITY', `主机 ${host.name} 维护中，暂不可购买，请选择其他主机`);
}

/** A key that changes whenever what the agents allow changes (the market's memo is rebuilt then). */
export function reportedKey(snap: Snapshot): string {
  return snap.hosts.map((h) => `${h.id}:${h.gpuTotal}:${h.gpuFree}`).join(',');
}
