import { describe, expect, it } from 'vitest';
import { changePurchase, gpuQuoteRequest, loginUrlFor, readPurchase, sizeQuoteRequest, writePurchase } from './purchaseQuery';

const read = (q: string) => readPurchase(new URLSearchParams(q));

describe('the purchase configuration in the URL', () => {
  it('reads the market card link into a GPU configuration with defaults for the rest', () => {
    const c = read('hostId=h1&gpuTypeId=rtx4090&regionId=bj-b&roomId=bj-b-1&cycle=Day&gpuCount=2');
    expect(c).toMatchObject({
      category: 'Gpu',
      hostId: 'h1',
      gpuTypeId: 'rtx4090',
      regionId: 'bj-b',
      roomId: 'bj-b-1',
      cycle: 'Day',
      gpuCount: 2,
      duration: 1,
      dataDiskGb: 0,
      name: '',
    });
  });

  it('clamps numbers to what an order may have', () => {
    expect(read('gpuCount=99&duration=9999&cycle=Week&dataDiskGb=-5')).toMatchObject({ gpuCount: 8, duration: 52, dataDiskGb: 0 });
    expect(read('category=Generic&count=0')).toMatchObject({ category: 'Generic', count: 1 });
  });

  it('a sizeId alone means size mode', () => {
    expect(read('sizeId=gen-c2m4').category).toBe('Generic');
    expect(read('category=Game&sizeId=game-3060').category).toBe('Game');
  });

  it('round-trips through the URL, writing only the fields of its own mode', () => {
    const gpu = read('gpuTypeId=rtx4090&regionId=bj-b&cycle=Day&gpuCount=2&duration=3&dataDiskGb=200&name=训练机');
    expect(read(writePurchase(gpu).toString())).toEqual(gpu);
    const size = read('category=Desktop&sizeId=dsk&regionId=bj-b&count=3&gpuTypeId=stale&cycle=Month');
    expect(writePurchase(size).get('gpuTypeId')).toBeNull();
    expect(writePurchase(size).get('count')).toBe('3');
  });

  it('forgets what an edit invalidates: the host and room with the region, the host with the model', () => {
    const c = read('hostId=h1&gpuTypeId=rtx4090&regionId=bj-b&roomId=bj-b-1&cycle=Month&duration=30');
    expect(changePurchase(c, { regionId: 'sh-a' })).toMatchObject({ regionId: 'sh-a', roomId: undefined, hostId: undefined });
    expect(changePurchase(c, { gpuTypeId: 'a100' })).toMatchObject({ roomId: 'bj-b-1', hostId: undefined });
    expect(changePurchase(c, { gpuCount: 2 })).toMatchObject({ hostId: 'h1' });
    expect(changePurchase(c, { cycle: 'Week' }).duration).toBe(30);
    expect(changePurchase({ ...c, duration: 700, cycle: 'Hour' }, { cycle: 'Day' }).duration).toBe(365);
  });

  it('a post-paid (按时) configuration carries no voucher: nothing is paid up front for one to apply to', () => {
    const voucherId = '0b6c1f0e-2a59-4d51-9b8e-6a3c0f2b9d11';
    const day = read(`gpuTypeId=rtx4090&cycle=Day&voucherId=${voucherId}`);
    expect(gpuQuoteRequest(day)?.voucherId).toBe(voucherId);
    const hour = changePurchase(day, { cycle: 'Hour' });
    expect(hour.voucherId).toBeUndefined();
    // A URL written by hand with both still quotes and writes without the voucher.
    const typed = read(`gpuTypeId=rtx4090&cycle=Hour&voucherId=${voucherId}`);
    expect(gpuQuoteRequest(typed)?.voucherId).toBeUndefined();
    expect(sizeQuoteRequest({ ...typed, category: 'Generic', sizeId: 'gen-c2m4', regionId: 'bj-b' })?.voucherId).toBeUndefined();
    expect(writePurchase(typed).has('voucherId')).toBe(false);
  });

  it('sends a visitor to log in with the whole configuration as the way back', () => {
    const c = read('gpuTypeId=rtx4090&regionId=bj-b&cycle=Day&gpuCount=2&duration=3&name=a b');
    const url = new URL(loginUrlFor(c), 'http://x');
    expect(url.pathname).toBe('/login');
    const back = new URL(url.searchParams.get('redirect')!, 'http://x');
    expect(back.pathname).toBe('/stats/purchase');
    expect(readPurchase(back.searchParams)).toEqual(c);
  });

  it('builds quote requests without empty ids, and never both an image and an application', () => {
    expect(gpuQuoteRequest(read('regionId=bj-b'))).toBeNull();
    expect(gpuQuoteRequest(read('gpuTypeId=rtx4090&applicationId=sd&imageId=img&cycle=Day'))).toEqual({
      gpuTypeId: 'rtx4090',
      gpuCount: 1,
      applicationId: 'sd',
      cycle: 'Day',
      duration: 1,
      dataDiskGb: 0,
    });
    expect(sizeQuoteRequest(read('category=Generic&sizeId=s1'))).toBeNull();
    expect(sizeQuoteRequest(read('category=Generic&sizeId=s1&regionId=bj-b&count=2'))).toEqual({
      sizeId: 's1',
      regionId: 'bj-b',
      count: 2,
      cycle: 'Hour',
      duration: 1,
      dataDiskGb: 0,
    });
  });

  it('an application that needs no card rides on a CPU size: its quote names the application and no image; only GPU and CPU take one', () => {
    const c = read('category=Generic&applicationId=jupyter-notebook&sizeId=gen-c2m4&regionId=bj-b&imageId=stale');
    expect(sizeQuoteRequest(c)).toEqual({
      sizeId: 'gen-c2m4',
      regionId: 'bj-b',
      count: 1,
      applicationId: 'jupyter-notebook',
      cycle: 'Hour',
      duration: 1,
      dataDiskGb: 0,
    });
    expect(read(writePurchase(c).toString()).applicationId).toBe('jupyter-notebook');
    expect(changePurchase(c, { category: 'Gpu' }).applicationId).toBe('jupyter-notebook');
    const desktop = changePurchase(c, { category: 'Desktop' });
    expect(desktop.applicationId).toBeUndefined();
    expect(writePurchase({ ...desktop, applicationId: 'jupyter-notebook' }).has('applicationId')).toBe(false);
  });
});
