import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { yuanToUnits } from '@console/contract';
import { get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { catalogueHosts, users, vouchers } from '../../db/schema.js';

const GPU_LIST = '/upgpu/api/v2.1/gpu/list';
const GPU_PRICE = '/infra/api/v2.1/gpu/order/price';
const GPU_USER_PRICE = '/infra/api/v2.1/gpu/order/user/price';
const SIZE_PRICE = '/infra/api/v2.1/order/price';
const SIZE_USER_PRICE = '/infra/api/v2.1/order/user/price';

type Host = { id: string; gpuFree: number; gpuTotal: number; gpuTypeId: string; regionId: string; roomId: string; price: { cycle: string; price: string } };

describe('catalogue reads', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.close());

  it('lists regions with their rooms and free cards, and only those selling a category when asked', async () => {
    const all = json(await get(s.app, '/infra/api/v2.1/regions')).items;
    expect(all.map((r: { id: string }) => r.id)).toEqual(['bj-b', 'sh-a', 'gz-a', 'cq-a']);
    const bj = all.find((r: { id: string }) => r.id === 'bj-b');
    expect(bj.rooms.map((r: { id: string }) => r.id)).toEqual(['bj-b-1', 'bj-b-2']);
    expect(bj.gpuFree).toBeGreaterThan(0);
    const game = json(await get(s.app, '/infra/api/v2.1/regions?category=Game')).items;
    expect(game.map((r: { id: string }) => r.id)).toEqual(['bj-b', 'sh-a', 'gz-a']);
    const bad = await get(s.app, '/infra/api/v2.1/regions?category=Spaceship');
    expect(bad.statusCode).toBe(400);
    expect(json(bad).code).toBe(40000001);
  });

  it('publishes the operator’s promotion', async () => {
    expect(json(await get(s.app, '/order/api/v2.1/promotion'))).toEqual({
      rechargeBonusRate: '0.18',
      newUserVoucher: String(yuanToUnits('50')),
    });
  });

  it('lists rooms of a region, one default room per region, and refuses an unknown region', async () => {
    expect(json(await get(s.app, '/upgpu/api/v2.1/room/list?regionId=sh-a')).items.map((r: { id: string }) => r.id)).toEqual(['sh-a-1']);
    const defaults = json(await get(s.app, '/upgpu/api/v2.1/default/room/list')).items;
    expect(defaults.map((r: { regionId: string }) => r.regionId)).toEqual(['bj-b', 'sh-a', 'gz-a', 'cq-a']);
    expect(defaults.every((r: { isDefault: boolean }) => r.isDefault)).toBe(true);
    const unknown = await get(s.app, '/upgpu/api/v2.1/room/list?regionId=mars-1');
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown)).toMatchObject({ code: 40020001, detail: '地区 mars-1 不存在' });
  });

  it('lists GPU types with specs, free cards and every cycle price; 0.7 and 0.5 carry their words', async () => {
    const types = json(await get(s.app, '/upgpu/api/v2.1/gpu_type/list')).items;
    const rtx = types.find((t: { id: string }) => t.id === 'rtx4090');
    expect(rtx).toMatchObject({ name: 'RTX 4090', memoryGb: 24, architecture: 'Ada Lovelace', cudaCapability: '8.9' });
    const month = rtx.prices.find((p: { cycle: string }) => p.cycle === 'Month');
    expect(month).toMatchObject({
      listPrice: String(yuanToUnits('1425.6')),
      price: String(yuanToUnits('997.92')),
      discountRate: '0.7',
      discountLabel: 'seven',
    });
    const v100 = types.find((t: { id: string }) => t.id === 'v100-32g');
    expect(v100.prices.find((p: { cycle: string }) => p.cycle === 'Month').discountLabel).toBe('five');
    expect(rtx.gpuTotal).toBe(40);
    expect(rtx.gpuFree).toBe(40 - (3 + 8 + 0 + 6 + 4));
  });

  it('GPU market: filters by region, room, model and free cards; full hosts last; price of the asked cycle', async () => {
    const all = json(await get(s.app, GPU_LIST));
    expect(all.total).toBe(14);
    expect(all.pageSize).toBe(20);
    const last = all.items.at(-1) as Host;
    expect(all.items.filter((h: Host) => h.gpuFree === 0).length).toBe(2);
    expect(last.gpuFree).toBe(0);

    const bj4090 = json(await get(s.app, `${GPU_LIST}?filterBy=region,bj-b,gpuType,rtx4090&cycle=Day`));
    expect(bj4090.items.map((h: Host) => h.id).sort()).toEqual(['bj-b-1-h01', 'bj-b-1-h02', 'bj-b-1-h03']);
    expect(bj4090.items[0].price).toMatchObject({ cycle: 'Day', price: String(yuanToUnits('45.144')) });

    const four = json(await get(s.app, `${GPU_LIST}?filterBy=gpuCount,4`)).items as Host[];
    expect(four.length).toBeGreaterThan(0);
    expect(four.every((h) => h.gpuFree >= 4)).toBe(true);

    const room = json(await get(s.app, `${GPU_LIST}?filterBy=room,bj-b-2`)).items as Host[];
    expect(room.every((h) => h.roomId === 'bj-b-2')).toBe(true);

    const paged = json(await get(s.app, `${GPU_LIST}?page=2&pageSize=5`));
    expect(paged).toMatchObject({ total: 14, page: 2, pageSize: 5 });
    expect(paged.items).toHaveLength(5);
  });

  it('sends the cached market list gzip-compressed to clients that accept it', async () => {
    const { gunzipSync } = await import('node:zlib');
    const plain = await get(s.app, GPU_LIST);
    const zipped = await s.app.inject({ method: 'GET', url: GPU_LIST, headers: { 'accept-encoding': 'gzip, br' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('accept-encoding');
    expect(zipped.rawPayload.length).toBeLessThan(plain.rawPayload.length / 3);
    expect(JSON.parse(gunzipSync(zipped.rawPayload).toString('utf8'))).toEqual(json(plain));
    expect(plain.headers['content-encoding']).toBeUndefined();
  });

  it('sorts the market by day price: "priceDay" means ascending, ",d" descending', async () => {
    const dayPrice = (h: Host & { prices: { cycle: string; price: string }[] }) => Number(h.prices.find((p) => p.cycle === 'Day')!.price);
    const free = (items: Host[]) => items.filter((h) => h.gpuFree > 0) as (Host & { prices: { cycle: string; price: string }[] })[];
    const asc = free(json(await get(s.app, `${GPU_LIST}?sortBy=priceDay`)).items).map(dayPrice);
    expect(asc).toEqual([...asc].sort((a, b) => a - b));
    const desc = free(json(await get(s.app, `${GPU_LIST}?sortBy=priceDay,d`)).items).map(dayPrice);
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    expect(desc[0]).toBeGreaterThan(desc.at(-1)!);
  });

  it('refuses malformed filters and sorts with 400 and the reason', async () => {
    for (const [query, detail] of [
      ['filterBy=region', /成对/],
      ['filterBy=colour,red', /不支持的筛选项 colour/],
      ['filterBy=gpuCount,0', /卡数必须是正整数/],
      ['filterBy=gpuCount,-2', /卡数必须是正整数/],
      ['sortBy=price;drop', /sortBy/],
      ['sortBy=name', /不支持按 name 排序/],
      ['page=0', /page/],
      ['cycle=Year', /cycle/],
    ] as const) {
      const res = await get(s.app, `${GPU_LIST}?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(json(res).code).toBe(40000001);
      expect(json(res).detail).toMatch(detail);
    }
    const unknown = await get(s.app, `${GPU_LIST}?filterBy=gpuType,gtx480`);
    expect(json(unknown)).toMatchObject({ code: 40020001, detail: 'GPU 型号 gtx480 不存在' });
  });

  it('lists sizes by category and region, sorted by day price either way', async () => {
    const games = json(await get(s.app, '/infra/api/v2.1/sizes?filterBy=category,Game&sortBy=priceDay')).items;
    expect(games.map((g: { id: string }) => g.id)).toEqual(['game-3060', 'game-4070']);
    expect(games[0].gpuName).toBe('RTX 3060');
    const desc = json(await get(s.app, '/infra/api/v2.1/sizes?filterBy=category,Generic&sortBy=priceDay,d')).items;
    expect(desc[0].id).toBe('gen-c16m64');
    const cq = json(await get(s.app, '/infra/api/v2.1/sizes?filterBy=region,cq-a')).items;
    expect(cq.every((x: { regionIds: string[] }) => x.regionIds.includes('cq-a'))).toBe(true);
    expect(cq.some((x: { category: string }) => x.category === 'Ebusiness')).toBe(false);
    const bad = await get(s.app, '/infra/api/v2.1/sizes?filterBy=category,Gpu');
    expect(bad.statusCode).toBe(400);
  });

  it('lists images for a category, and GPU images that fit the card', async () => {
    const desktop = json(await get(s.app, '/infra/api/v2.1/images?filterBy=category,Desktop')).items;
    expect(desktop.map((i: { id: string }) => i.id)).toEqual(['win-server-2022', 'win-10', 'ubuntu-22.04-desktop', 'debian-12-desktop']);
    const frameworks = json(await get(s.app, '/infra/api/v2.1/images?filterBy=kind,framework,framework,pytorch')).items;
    expect(frameworks.map((i: { id: string }) => i.id)).toEqual(['pytorch-2.3-cu121', 'pytorch-2.1-cu118', 'pytorch-1.13-cu117', 'pytorch-1.13-cpu']);

    const for4090 = json(await get(s.app, '/upgpu/api/v2.1/gpu/images?gpuTypeId=rtx4090')).items.map((i: { id: string }) => i.id);
    expect(for4090).toContain('pytorch-2.3-cu121');
    expect(for4090).not.toContain('pytorch-1.13-cu117'); // CUDA 11.7 is older than a 4090 needs
    expect(for4090).not.toContain('win-10');
    const forV100 = json(await get(s.app, '/upgpu/api/v2.1/gpu/images?gpuTypeId=v100-32g')).items.map((i: { id: string }) => i.id);
    expect(forV100).toContain('pytorch-1.13-cu117');
  });

  it('searches image applications by keyword and category, with paging and the category list', async () => {
    const all = json(await get(s.app, '/upgpu/api/v2.1/application/list'));
    expect(all.total).toBe(10);
    expect(all.items).toHaveLength(10);
    expect(all.categories).toEqual(['AI 绘画', '模型训练', '大模型', '语音', '开发环境', '数据科学']);
    const comfy = json(await get(s.app, `/upgpu/api/v2.1/application/list?keyword=${encodeURIComponent('comfy')}`)).items;
    expect(comfy.map((a: { id: string }) => a.id)).toEqual(['comfyui']);
    const llm = json(await get(s.app, `/upgpu/api/v2.1/application/list?category=${encodeURIComponent('大模型')}&pageSize=2&page=2`));
    expect(llm).toMatchObject({ total: 3, page: 2, pageSize: 2 });
    expect(llm.items.map((a: { id: string }) => a.id)).toEqual(['vllm']);
    const none = json(await get(s.app, `/upgpu/api/v2.1/application/list?keyword=${encodeURIComponent('不存在的应用')}`));
    expect(none).toMatchObject({ total: 0, items: [] });
    expect((await get(s.app, `/upgpu/api/v2.1/application/list?keyword=${'x'.repeat(51)}`)).statusCode).toBe(400);
  });

  it('recommends the region with the most free cards, and rooms/types that can take an order', async () => {
    expect(json(await get(s.app, '/infra/api/v2.1/region/recommend?category=Gpu&gpuTypeId=h800'))).toMatchObject({ regionId: 'bj-b' });
    expect(json(await get(s.app, '/infra/api/v2.1/region/recommend?category=Ebusiness'))).toMatchObject({ regionId: 'sh-a' });

    const h800x2 = json(await get(s.app, '/upgpu/api/v2.1/gpu/available_zones?gpuTypeId=h800&gpuCount=2')).items;
    expect(h800x2).toEqual([expect.objectContaining({ roomId: 'bj-b-2', hosts: 1, gpuFree: 2 })]);
    expect(json(await get(s.app, '/upgpu/api/v2.1/gpu/available_zones?gpuTypeId=h800&gpuCount=3')).items).toEqual([]);
    expect((await get(s.app, '/upgpu/api/v2.1/gpu/available_zones?gpuTypeId=h800&gpuCount=9')).statusCode).toBe(400);

    const types = json(await get(s.app, '/upgpu/api/v2.1/gpu/available_gpu_types?roomId=sh-a-1&gpuCount=4')).items;
    expect(types.map((t: { id: string }) => t.id).sort()).toEqual(['a100-80g', 'l20', 'rtx3090', 'rtx4090']);
    expect(types.find((t: { id: string }) => t.id === 'a100-80g').maxGpuPerHost).toBe(0);
    expect(types.at(-1).maxGpuPerHost).toBeLessThan(4); // those that cannot take 4 cards come last
  });

  it('follows inventory: reserved cards leave the market at once, the last card goes to exactly one of two buyers', async () => {
    const host = 'gz-a-1-h01';
    const freeOf = async () => (json(await get(s.app, `${GPU_LIST}?filterBy=room,gz-a-1,gpuType,rtx4090`)).items[0] as Host).gpuFree;
    expect(await freeOf()).toBe(4);
    await s.ctx.inventory.reserve(s.ctx.db, host, 3);
    expect(await freeOf()).toBe(1);
    const race = await Promise.allSettled([s.ctx.inventory.reserve(s.ctx.db, host, 1), s.ctx.inventory.reserve(s.ctx.db, host, 1)]);
    expect(race.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await freeOf()).toBe(0);
    await expect(s.ctx.inventory.reserve(s.ctx.db, host, 1)).rejects.toMatchObject({ code: 40920001 });
    const quote = await post(s.app, GPU_PRICE, { gpuTypeId: 'rtx4090', gpuCount: 1, hostId: host, cycle: 'Hour', duration: 1 });
    expect(json(quote).code).toBe(40920001);
    await s.ctx.inventory.release(s.ctx.db, host, 4);
    await s.ctx.inventory.release(s.ctx.db, host, 4); // never beyond the host's total
    expect(await freeOf()).toBe(8);
    await s.ctx.inventory.reserve(s.ctx.db, host, 4);
  });
});

describe('price quotes', () => {
  let s: TestServer;
  let token: string;
  let userId: string;
  beforeAll(async () => {
    s = await startTestServer();
    const u = await registerUser(s);
    token = u.token;
    userId = u.user.id;
  });
  afterAll(async () => s.close());

  const gpu = { gpuTypeId: 'rtx4090', gpuCount: 2, regionId: 'bj-b', cycle: 'Day', duration: 3, dataDiskGb: 0 };

  async function addVoucher(owner: string, fields: Partial<typeof vouchers.$inferInsert> = {}) {
    const now = s.clock.now();
    const id = randomUUID();
    await s.ctx.db.insert(vouchers).values({
      id,
      userId: owner,
      name: '新用户 50 元代金券',
      amount: yuanToUnits('50'),
      categories: [],
      validFrom: new Date(now.getTime() - 1000),
      expiresAt: new Date(now.getTime() + 30 * 86400_000),
      createdAt: now,
      ...fields,
    });
    return id;
  }

  it('quotes a GPU configuration for a visitor: lines, the day discount and a placement on a host that fits', async () => {
    const res = await post(s.app, GPU_PRICE, gpu);
    expect(res.statusCode).toBe(200);
    const q = json(res);
    expect(q).toMatchObject({ category: 'Gpu', cycle: 'Day', duration: 3, unit: '天', discountRate: '0.95' });
    expect(q.listTotal).toBe(String(yuanToUnits('285.12')));
    expect(q.total).toBe(String(yuanToUnits('270.864')));
    expect(q.lines.reduce((n: bigint, l: { amount: string }) => n + BigInt(l.amount), 0n)).toBe(BigInt(q.total));
    expect(q.placement.regionId).toBe('bj-b');
    // Tightest fit: the host with the fewest free cards that still takes 2.
    expect(q.placement.hostId).toBe('bj-b-1-h01');
    expect(json(await post(s.app, GPU_PRICE, gpu))).toEqual(q);
  });

  it('changes the total when the cycle changes, and charges the data disk beyond 50 GB per card', async () => {
    const hour = json(await post(s.app, GPU_PRICE, { ...gpu, cycle: 'Hour', duration: 1 }));
    expect(hour.total).toBe(String(yuanToUnits('3.96')));
    const disk = json(await post(s.app, GPU_PRICE, { ...gpu, cycle: 'Hour', duration: 24, dataDiskGb: 200 }));
    const diskLine = disk.lines.find((l: { kind: string }) => l.kind === 'dataDisk');
    expect(diskLine).toMatchObject({ quantity: 100, amount: String(yuanToUnits('0.7')) });
  });

  it('quotes an image application on a card with enough memory, and refuses one that does not fit', async () => {
    const ok = json(await post(s.app, GPU_PRICE, { ...gpu, gpuCount: 1, applicationId: 'comfyui' }));
    expect(ok.category).toBe('App');
    const llm = await post(s.app, GPU_PRICE, { ...gpu, gpuTypeId: 'rtx3090', gpuCount: 1, applicationId: 'llama-factory', regionId: undefined });
    expect(llm.statusCode).toBe(200);
    expect(json(llm).category).toBe('App');
    const tooOld = await post(s.app, GPU_PRICE, { ...gpu, imageId: 'pytorch-1.13-cu117' });
    expect(tooOld.statusCode).toBe(400);
    expect(json(tooOld)).toMatchObject({ code: 40020003 });
    expect(json(tooOld).detail).toMatch(/CUDA 11.8/);
    const both = await post(s.app, GPU_PRICE, { ...gpu, imageId: 'ubuntu-22.04', applicationId: 'comfyui' });
    expect(json(both).code).toBe(40000001);
  });

  it('refuses configurations that do not exist or have no capacity, with their codes', async () => {
    const cases: [object, number, number, RegExp?][] = [
      [{ ...gpu, regionId: 'mars-1' }, 400, 40020001, /地区 mars-1 不存在/],
      [{ ...gpu, gpuTypeId: 'gtx480' }, 400, 40020001, /GPU 型号 gtx480/],
      [{ ...gpu, roomId: 'sh-a-1' }, 400, 40020001, /不在所选地区/],
      [{ ...gpu, hostId: 'sh-a-1-h01' }, 400, 40020001, /不在所选地区或机房/],
      [{ ...gpu, hostId: 'bj-b-1-h04' }, 400, 40020001, /不是 RTX 4090/],
      [{ ...gpu, imageId: 'no-such-image' }, 400, 40020001, /镜像 no-such-image/],
      [{ ...gpu, gpuTypeId: 'h800', gpuCount: 4 }, 409, 40920001, /最多空闲 2 卡/],
      [{ ...gpu, hostId: 'bj-b-1-h02', gpuCount: 1 }, 409, 40920001, /空闲 0 卡/],
      [{ ...gpu, gpuCount: -1 }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, gpuCount: 9 }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, gpuCount: 1.5 }, 400, 40000001, /^gpuCount/],
      // Counts take a JSON number or plain digits only, never what merely converts to a number.
      [{ ...gpu, gpuCount: true }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, gpuCount: [2] }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, gpuCount: '0x1' }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, gpuCount: '1e0' }, 400, 40000001, /^gpuCount/],
      [{ ...gpu, duration: true }, 400, 40000001, /^duration/],
      [{ ...gpu, duration: 0 }, 400, 40000001, /^duration/],
      [{ ...gpu, duration: 366 }, 400, 40000001, /^duration/],
      [{ ...gpu, dataDiskGb: -10 }, 400, 40000001, /^dataDiskGb/],
      [{ ...gpu, cycle: 'Year' }, 400, 40000001, /^cycle/],
      [{ ...gpu, gpuTypeId: 'x'.repeat(65) }, 400, 40000001, /^gpuTypeId/],
      [{ gpuCount: 1, cycle: 'Hour', duration: 1 }, 400, 40000001, /^gpuTypeId/],
      [{ ...gpu, voucherId: randomUUID() }, 401, 40100001, /请先登录/],
    ];
    for (const [body, status, code, detail] of cases) {
      const res = await post(s.app, GPU_PRICE, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
      expect(json(res).code, JSON.stringify(body)).toBe(code);
      if (detail) expect(json(res).detail).toMatch(detail);
    }
  });

  it('quotes sizes for visitors and refuses a size that does not exist or is not sold in the region', async () => {
    const q = json(await post(s.app, SIZE_PRICE, { sizeId: 'gen-c4m8', regionId: 'cq-a', count: 2, cycle: 'Month', duration: 1, imageId: 'debian-12' }));
    expect(q).toMatchObject({ category: 'Generic', discountLabel: 'seven', placement: { regionId: 'cq-a' } });
    expect(q.total).toBe(String(yuanToUnits('241.92')));
    expect(json(await post(s.app, SIZE_PRICE, { sizeId: 'gen-c999', regionId: 'cq-a', cycle: 'Day', duration: 1 }))).toMatchObject({ code: 40020001 });
    expect(json(await post(s.app, SIZE_PRICE, { sizeId: 'ebz-c2m4', regionId: 'cq-a', cycle: 'Day', duration: 1 })).detail).toMatch(/暂未开售/);
    expect(json(await post(s.app, SIZE_PRICE, { sizeId: 'dsk-c4m8', regionId: 'bj-b', cycle: 'Day', duration: 1, imageId: 'debian-12' })).code).toBe(40020003);
    expect(json(await post(s.app, SIZE_PRICE, { sizeId: 'gen-c4m8', regionId: 'bj-b', cycle: 'Day', duration: 1, count: 0 })).detail).toMatch(/^count/);
  });

  it('the user quote needs a session, applies the user own voucher and leaves it unused', async () => {
    expect((await post(s.app, GPU_USER_PRICE, gpu)).statusCode).toBe(401);
    const voucherId = await addVoucher(userId);
    const q = json(await post(s.app, GPU_USER_PRICE, { ...gpu, voucherId }, token));
    expect(q.voucherDeduction).toBe(String(yuanToUnits('50')));
    expect(q.total).toBe(String(yuanToUnits('220.864')));
    expect(q.lines.at(-1)).toMatchObject({ kind: 'voucher', amount: String(-yuanToUnits('50')) });
    const [row] = await s.ctx.db.select().from(vouchers).where(eq(vouchers.id, voucherId));
    expect(row!.status).toBe('Unused');
    const size = json(await post(s.app, SIZE_USER_PRICE, { sizeId: 'gen-c2m4', regionId: 'bj-b', cycle: 'Hour', duration: 1, voucherId }, token));
    expect(size.total).toBe('0');
  });

  it('refuses a voucher that is not the user’s, used, expired, not yet valid, for another product or under its minimum', async () => {
    const other = await registerUser(s);
    const now = s.clock.now().getTime();
    const cases: [string, RegExp][] = [
      [await addVoucher(other.user.id), /不属于当前账号/],
      [randomUUID(), /不存在或不属于当前账号/],
      [await addVoucher(userId, { status: 'Used' }), /已使用/],
      [await addVoucher(userId, { expiresAt: new Date(now - 1) }), /已过期/],
      [await addVoucher(userId, { validFrom: new Date(now + 86400_000) }), /尚未到可用时间/],
      [await addVoucher(userId, { categories: ['Generic'] }), /不适用于GPU 实例/],
      [await addVoucher(userId, { minSpend: yuanToUnits('1000') }), /满 1000.00 元可用/],
    ];
    for (const [voucherId, detail] of cases) {
      const res = await post(s.app, GPU_USER_PRICE, { ...gpu, voucherId }, token);
      expect(res.statusCode).toBe(400);
      expect(json(res)).toMatchObject({ code: 40020002 });
      expect(json(res).detail).toMatch(detail);
    }
    expect(json(await post(s.app, GPU_USER_PRICE, { ...gpu, voucherId: 'not-a-uuid' }, token)).detail).toMatch(/^voucherId/);
  });

  it('gives a verified student the operator’s student price', async () => {
    const student = await registerUser(s);
    await s.ctx.db.update(users).set({ isStudent: true }).where(eq(users.id, student.user.id));
    const plain = json(await post(s.app, GPU_USER_PRICE, { ...gpu, cycle: 'Hour', duration: 10 }, token));
    const cheap = json(await post(s.app, GPU_USER_PRICE, { ...gpu, cycle: 'Hour', duration: 10 }, student.token));
    expect(plain.total).toBe(String(yuanToUnits('39.6')));
    expect(cheap.total).toBe(String(yuanToUnits('35.64')));
    expect(cheap.lines.map((l: { kind: string }) => l.kind)).toContain('studentDiscount');
  });
});

describe('the operator catalogue file', () => {
  it('applies once, deactivates removed entries, keeps live inventory when a host grows, and rejects a broken file', async () => {
    const { mkdtempSync, readFileSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const { DEFAULT_CATALOGUE_FILE } = await import('./seed-file.js');
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'catalogue-')), 'catalogue.json');
    const original = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));
    writeFileSync(file, JSON.stringify(original));
    const s = await startTestServer({ env: { CATALOGUE_FILE: file } });
    try {
      expect(await s.ctx.reloadCatalogue()).toBe(false); // same file: nothing written

      await s.ctx.inventory.reserve(s.ctx.db, 'cq-a-1-h01', 2); // 3 free before, 1 after
      const edited = structuredClone(original);
      edited.hosts.find((h: { id: string }) => h.id === 'cq-a-1-h01').gpuTotal = 10;
      edited.regions = edited.regions.filter((r: { id: string }) => r.id !== 'gz-a');
      edited.rooms = edited.rooms.filter((r: { regionId: string }) => r.regionId !== 'gz-a');
      edited.hosts = edited.hosts.filter((h: { roomId: string }) => h.roomId !== 'gz-a-1');
      edited.sizes.forEach((x: { regionIds: string[] }) => (x.regionIds = x.regionIds.filter((r) => r !== 'gz-a')));
      edited.version = original.version + 1;
      writeFileSync(file, JSON.stringify(edited));
      expect(await s.ctx.reloadCatalogue()).toBe(true);

      const regions = json(await get(s.app, '/infra/api/v2.1/regions')).items.map((r: { id: string }) => r.id);
      expect(regions).toEqual(['bj-b', 'sh-a', 'cq-a']);
      const [host] = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, 'cq-a-1-h01'));
      expect(host).toMatchObject({ gpuTotal: 10, gpuFree: 3 });
      const [gz] = await s.ctx.db.select().from(catalogueHosts).where(eq(catalogueHosts.id, 'gz-a-1-h01'));
      expect(gz!.active).toBe(false);
      expect(json(await get(s.app, `${GPU_LIST}?filterBy=gpuType,v100-32g`)).total).toBe(0);

      const broken = structuredClone(edited);
      broken.hosts[0].roomId = 'nowhere';
      writeFileSync(file, JSON.stringify(broken));
      await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/机房 nowhere 不存在/);
      writeFileSync(file, '{ not json');
      await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/不是有效的 JSON/);
      expect(json(await get(s.app, '/infra/api/v2.1/regions')).items).toHaveLength(3);
      const version = await s.ctx.db.execute(sql`select value from catalogue_state where key = 'version'`);
      expect(Number((version as unknown as { rows: { value: number }[] }).rows[0]!.value)).toBe(2);
    } finally {
      await s.close();
    }
  });
});
