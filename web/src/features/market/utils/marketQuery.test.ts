import { describe, expect, it } from 'vitest';
import { changeFilters, marketRequest, readMarketFilters, writeMarketFilters } from './marketQuery';

const read = (q: string) => readMarketFilters(new URLSearchParams(q));

describe('market filters ↔ URL ↔ gpu/list query', () => {
  it('a plain market asks for the hourly price, page 1, nothing filtered', () => {
    expect(marketRequest(read(''))).toEqual({ cycle: 'Hour', page: 1, pageSize: 24 });
  });

  it('region, room, model and card count travel as one comma-joined filterBy; the sort as priceDay,a|d', () => {
    const f = read('regionId=bj-b&roomId=bj-b-1&gpuTypeId=rtx4090&gpuCount=2&cycle=Day&sort=desc&page=3');
    expect(marketRequest(f)).toEqual({
      filterBy: 'region,bj-b,room,bj-b-1,gpuType,rtx4090,gpuCount,2',
      cycle: 'Day',
      sortBy: 'priceDay,d',
      page: 3,
      pageSize: 24,
    });
    expect(marketRequest({ ...f, sort: 'asc' }).sortBy).toBe('priceDay,a');
  });

  it('ignores values the market does not offer instead of sending them', () => {
    const f = read('roomId=bj-b-1&gpuCount=3&cycle=Usage&sort=up&page=-1');
    expect(f).toEqual({ regionId: undefined, roomId: undefined, gpuTypeId: undefined, gpuCount: undefined, cycle: 'Hour', sort: '', page: 1 });
  });

  it('writes only what differs from the defaults, and reads back what it wrote', () => {
    const f = read('regionId=sh-a&gpuTypeId=a100&cycle=Month&sort=asc&page=2');
    expect(writeMarketFilters(f).toString()).toBe('regionId=sh-a&gpuTypeId=a100&cycle=Month&sort=asc&page=2');
    expect(read(writeMarketFilters(f).toString())).toEqual(f);
    expect(writeMarketFilters(read('')).toString()).toBe('');
  });

  it('a new filter starts again at page 1, and a new region forgets the old room', () => {
    const f = read('regionId=bj-b&roomId=bj-b-1&page=4');
    expect(changeFilters(f, { gpuTypeId: 'rtx4090' })).toMatchObject({ page: 1, roomId: 'bj-b-1' });
    expect(changeFilters(f, { regionId: 'sh-a' })).toMatchObject({ page: 1, regionId: 'sh-a', roomId: undefined });
  });
});
