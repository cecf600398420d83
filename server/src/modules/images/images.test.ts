import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import type { Instance, Order, SharedImage, UserImage, UserImagePage } from '@console/contract';
import { countRows, get, json, post, put, registerUser, type TestServer } from '../../../test/harness.js';
import { DELAYS, GPU_ORDER, LIST, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { instances, orders, userImages, users } from '../../db/schema.js';
import type { SimulatedComputeDriver } from '../../drivers/compute/simulated.js';

const IMAGES = '/upgpu/api/v2.1/images';
const del = (s: TestServer, url: string, token?: string) => s.app.inject({ method: 'DELETE', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('my images', () => {
  let s: TestServer;
  let sim: SimulatedComputeDriver;
  const k = instanceKit(() => s);
  instanceSuite((server, driver) => {
    s = server;
    sim = driver;
  });

  const save = (token: string, id: string, name: unknown) => post(s.app, `${LIST}/${id}/image`, { name }, token);
  const list = async (token: string, q = '') => json<UserImagePage>(await get(s.app, `${IMAGES}${q}`, token));
  const log = async (token: string, id: string) =>
    json<{ items: { action: string; fromStatus: string; toStatus: string; detail: string }[] }>(
      await get(s.app, `/api/v1/operation/logs?filterBy=instance,${id}`, token),
    ).items;
  const share = (token: string, id: string, shared: boolean) => put(s.app, `${IMAGES}/${id}/share`, { shared }, token);

  /** A stopped instance saved as an Active image; returns both. */
  async function activeImage(token: string, name = '训练环境') {
    const { id } = await k.stopped(token);
    const res = await save(token, id, name);
    expect(res.statusCode, res.body).toBe(200);
    await k.settle(DELAYS.saveImage);
    const image = json<UserImage>(await get(s.app, `${IMAGES}/${json<UserImage>(res).id}`, token));
    expect(image.status).toBe('Active');
    return { instanceId: id, image };
  }

  it('saves a stopped instance as an image: Build while the instance is Operating, then Active, and the instance back to Stopped', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token);
    const res = await save(u.token, id, ' SD 训练环境 v1 ');
    expect(res.statusCode, res.body).toBe(200);
    const image = json<UserImage>(res);
    expect(image).toMatchObject({
      name: 'SD 训练环境 v1',
      status: 'Build',
      sizeGb: null,
      shared: false,
      sharePath: null,
      sourceInstanceId: id,
      category: 'Gpu',
      gpuName: 'RTX 4090',
    });
    expect(image).toMatchObject({ baseImageId: 'pytorch-2.3-cu121', baseImageName: 'PyTorch 2.3.0' });
    const operating = await k.instance(u.token, id);
    expect(operating).toMatchObject({ status: 'Operating', actions: [], tasks: [] });
    // Busy: no second task, no action.
    expect(json(await save(u.token, id, '另一个'))).toMatchObject({ code: 40020010 });
    expect(json(await k.act(u.token, id, 'start'))).toMatchObject({ code: 40020010 });

    await k.settle(DELAYS.saveImage - 1);
    expect((await list(u.token)).items[0]!.status).toBe('Build');
    await k.settle(1);
    const done = (await list(u.token)).items[0]!;
    expect(done.status).toBe('Active');
    expect(done.sizeGb).toBeGreaterThanOrEqual(8);
    expect(done.sizeGb).toBeLessThanOrEqual(27);
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopped', lastError: null, tasks: ['saveImage', 'resizeDisk', 'migrate'] });
    expect((await log(u.token, id)).slice(0, 2)).toEqual([
      expect.objectContaining({ action: 'done:saveImage', fromStatus: 'Operating', toStatus: 'Stopped' }),
      expect.objectContaining({ action: 'saveImage', fromStatus: 'Stopped', toStatus: 'Operating', detail: '镜像「SD 训练环境 v1」' }),
    ]);
  });

  it('saves from no-card mode (Shutdown) and goes back to Shutdown', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token, { noCard: true });
    expect(json<UserImage>(await save(u.token, id, '无卡保存')).status).toBe('Build');
    await k.settle(DELAYS.saveImage);
    expect((await k.instance(u.token, id)).status).toBe('Shutdown');
    expect((await list(u.token)).items[0]!.status).toBe('Active');
  });

  it('refuses a running instance (stop it first) and bad names, writing nothing', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.running(u.token);
    const before = await countRows(s, 'user_images');
    const running = await save(u.token, id, '运行中保存');
    expect(running.statusCode).toBe(400);
    expect(json(running)).toMatchObject({ code: 40021001 });
    expect(json(running).detail).toMatch(/请先关机/);
    await k.act(u.token, id, 'stop');
    await k.settle(DELAYS.stop);
    for (const bad of ['', '   ', 'x'.repeat(31), '镜像<script>', 42, null]) {
      const res = await save(u.token, id, bad);
      expect(res.statusCode).toBe(400);
      expect(json(res)).toMatchObject({ code: 40000001 });
    }
    expect(json(await post(s.app, `${LIST}/${id}/image`, {}, u.token))).toMatchObject({ code: 40000001 });
    expect(json(await save(u.token, 'not-a-uuid', '好名字'))).toMatchObject({ code: 40000001 });
    const stranger = await k.fundedUser('1');
    expect(json(await save(stranger.token, id, '别人的'))).toMatchObject({ code: 40400004 });
    expect((await post(s.app, `${LIST}/${id}/image`, { name: '无登录' })).statusCode).toBe(401);
    expect(await countRows(s, 'user_images')).toBe(before);
    expect((await k.instance(u.token, id)).status).toBe('Stopped');
  });

  it('marks the image BuildFail when the driver fails, and the instance goes back with the reason shown', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token);
    await sim.injectFault({ kind: 'saveImage', message: '快照存储空间不足' });
    const image = json<UserImage>(await save(u.token, id, '会失败的镜像'));
    await k.settle(DELAYS.saveImage);
    expect(json<UserImage>(await get(s.app, `${IMAGES}/${image.id}`, u.token))).toMatchObject({
      status: 'BuildFail',
      failReason: '快照存储空间不足',
      sizeGb: null,
    });
    expect(await k.instance(u.token, id)).toMatchObject({ status: 'Stopped', lastError: '快照存储空间不足' });
    expect((await log(u.token, id))[0]).toMatchObject({ action: 'fail:saveImage', toStatus: 'Stopped' });
    // A failed image cannot be shared, but can be deleted.
    expect(json(await share(u.token, image.id, true))).toMatchObject({ code: 40021004 });
    expect(json(await del(s, `${IMAGES}/${image.id}`, u.token))).toMatchObject({ ok: true });
  });

  it('keeps names unique per account and counts images against the limit', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token);
    expect(json<UserImage>(await save(u.token, id, '基础环境')).status).toBe('Build');
    await k.settle(DELAYS.saveImage);
    const dup = await save(u.token, id, '基础环境');
    expect(dup.statusCode).toBe(409);
    expect(json(dup)).toMatchObject({ code: 40921001 });
    expect((await k.instance(u.token, id)).status).toBe('Stopped');
    // Another account may use the same name.
    const other = await k.fundedUser('50');
    const { id: otherId } = await k.stopped(other.token);
    expect((await save(other.token, otherId, '基础环境')).statusCode).toBe(200);
    await k.settle(DELAYS.saveImage);

    // Up to the catalogue's userImageLimit (10): failed images count too.
    await sim.injectFault({ kind: 'saveImage', count: 1 });
    for (let n = 2; n <= 10; n++) {
      expect((await save(u.token, id, `环境 ${n}`)).statusCode).toBe(200);
      await k.settle(DELAYS.saveImage);
    }
    const full = await list(u.token, '?pageSize=5');
    expect(full).toMatchObject({ total: 10, used: 10, limit: 10, page: 1, pageSize: 5 });
    expect(full.items).toHaveLength(5);
    expect(full.items[0]!.name).toBe('环境 10');
    const before = await countRows(s, 'user_images');
    expect(json(await save(u.token, id, '第 11 个'))).toMatchObject({ code: 40021003 });
    expect(await countRows(s, 'user_images')).toBe(before);
    expect((await k.instance(u.token, id)).status).toBe('Stopped');

    // Deleting one makes room, and frees its name.
    const first = (await list(u.token, '?page=2&pageSize=5')).items.at(-1)!;
    expect(first.name).toBe('基础环境');
    expect(json(await del(s, `${IMAGES}/${first.id}`, u.token))).toMatchObject({ ok: true });
    expect(json(await get(s.app, `${IMAGES}/${first.id}`, u.token))).toMatchObject({ code: 40421001 });
    expect((await save(u.token, id, '基础环境')).statusCode).toBe(200);
    await k.settle(DELAYS.saveImage);
  });

  it('renames, refuses to delete while building, and keeps other accounts’ images out of reach', async () => {
    const u = await k.fundedUser('50');
    const { id } = await k.stopped(u.token);
    const image = json<UserImage>(await save(u.token, id, '旧名字'));
    const busy = await del(s, `${IMAGES}/${image.id}`, u.token);
    expect(busy.statusCode).toBe(400);
    expect(json(busy)).toMatchObject({ code: 40021004 });
    await k.settle(DELAYS.saveImage);
    expect(json<UserImage>(await put(s.app, `${IMAGES}/${image.id}/name`, { name: '新名字' }, u.token)).name).toBe('新名字');
    expect(json(await put(s.app, `${IMAGES}/${image.id}/name`, { name: '' }, u.token))).toMatchObject({ code: 40000001 });
    const stranger = await k.fundedUser('1');
    for (const res of [
      await get(s.app, `${IMAGES}/${image.id}`, stranger.token),
      await put(s.app, `${IMAGES}/${image.id}/name`, { name: '抢走' }, stranger.token),
      await share(stranger.token, image.id, true),
      await del(s, `${IMAGES}/${image.id}`, stranger.token),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(json(res)).toMatchObject({ code: 40421001 });
    }
    expect((await list(u.token)).items.map((i) => i.name)).toEqual(['新名字']);
  });

  it('shows a shared image to any logged-in user (owner masked), and nothing once unshared or deleted', async () => {
    const owner = await k.fundedUser('50');
    const viewer = await registerUser(s);
    const { image } = await activeImage(owner.token, '分享的环境');
    const url = `${IMAGES}/shared/${image.id}`;
    // Not shared yet: a clear 404 to anyone else, the page for its owner.
    expect(json(await get(s.app, url, viewer.token))).toMatchObject({ code: 40421002 });
    expect(json<SharedImage>(await get(s.app, url, owner.token))).toMatchObject({ mine: true });

    const shared = json<UserImage>(await share(owner.token, image.id, true));
    expect(shared).toMatchObject({ shared: true, sharePath: `/image/share?id=${image.id}` });
    const seen = json<SharedImage>(await get(s.app, url, viewer.token));
    expect(seen).toMatchObject({
      id: image.id,
      name: '分享的环境',
      category: 'Gpu',
      gpuName: 'RTX 4090',
      sizeGb: image.sizeGb,
      mine: false,
      baseImageName: image.baseImageName,
    });
    expect(seen.owner).toBe(`${owner.mobile.slice(0, 3)}****${owner.mobile.slice(-4)}`);
    expect(JSON.stringify(seen)).not.toContain(owner.mobile);
    expect(JSON.stringify(seen)).not.toContain(image.sourceInstanceId);
    expect((await get(s.app, url)).statusCode).toBe(401);
    expect(json(await get(s.app, `${IMAGES}/shared/not-a-uuid`, viewer.token))).toMatchObject({ code: 40000001 });
    expect(json(await get(s.app, `${IMAGES}/shared/00000000-0000-4000-8000-000000000000`, viewer.token))).toMatchObject({ code: 40421002 });

    expect(json<UserImage>(await share(owner.token, image.id, false)).sharePath).toBeNull();
    expect(json(await get(s.app, url, viewer.token))).toMatchObject({ code: 40421002 });
    await share(owner.token, image.id, true);
    await del(s, `${IMAGES}/${image.id}`, owner.token);
    const gone = await get(s.app, url, viewer.token);
    expect(gone.statusCode).toBe(404);
    expect(json(gone)).toMatchObject({ code: 40421002 });
  });

  it('creates an instance from a shared image (or one’s own), and refuses one not shared, writing nothing', async () => {
    const owner = await k.fundedUser('50');
    const buyer = await k.fundedUser('50');
    const { image } = await activeImage(owner.token, '推理环境');
    const gpu = { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1, userImageId: image.id };

    const ordersBefore = await countRows(s, 'orders');
    const instancesBefore = await countRows(s, 'instances');
    const refused = await post(s.app, GPU_ORDER, gpu, buyer.token);
    expect(refused.statusCode).toBe(404);
    expect(json(refused)).toMatchObject({ code: 40421002 });
    expect(json(await post(s.app, '/infra/api/v2.1/gpu/order/user/price', gpu, buyer.token))).toMatchObject({ code: 40421002 });
    // The visitor price has no account to own or be shared an image with.
    expect((await post(s.app, '/infra/api/v2.1/gpu/order/price', gpu)).statusCode).toBe(401);
    expect(json(await post(s.app, GPU_ORDER, { ...gpu, imageId: 'ubuntu-22.04' }, buyer.token))).toMatchObject({ code: 40000001 });
    expect(await countRows(s, 'orders')).toBe(ordersBefore);
    expect(await countRows(s, 'instances')).toBe(instancesBefore);

    await share(owner.token, image.id, true);
    expect((await post(s.app, '/infra/api/v2.1/gpu/order/user/price', gpu, buyer.token)).statusCode).toBe(200);
    const res = await post(s.app, GPU_ORDER, { ...gpu, name: '用分享镜像' }, buyer.token);
    expect(res.statusCode, res.body).toBe(200);
    const order = json<Order>(res);
    const inst = json<Instance>(await get(s.app, `${LIST}/${order.resourceId}`, buyer.token));
    expect(inst).toMatchObject({ name: '用分享镜像', userImageId: image.id, userImageName: '推理环境', imageId: image.baseImageId });
    const [row] = await s.ctx.db.select().from(instances).where(eq(instances.id, inst.id));
    expect(row!.userImageId).toBe(image.id);
    await k.settle(DELAYS.create);
    const [op] = await sim.overview().then((o) => o.machines.filter((m) => m.instanceId === inst.id));
    expect((op!.spec as { userImageRef: string }).userImageRef).toBe(image.id);
    await k.settle(DELAYS.boot);
    expect((await k.instance(buyer.token, inst.id)).status).toBe('Running');

    // The owner uses it without sharing too; a CPU size cannot use a GPU image.
    await share(owner.token, image.id, false);
    expect((await post(s.app, '/infra/api/v2.1/gpu/order/user/price', gpu, owner.token)).statusCode).toBe(200);
    expect(
      json(
        await post(
          s.app,
          '/infra/api/v2.1/order/user/price',
          { sizeId: 'gen-c2m4', regionId: 'bj-b', cycle: 'Hour', duration: 1, userImageId: image.id },
          owner.token,
        ),
      ),
    ).toMatchObject({
      code: 40020003,
    });
  });

  it('refunds a prepaid order whose image was unshared before it was paid', async () => {
    const owner = await k.fundedUser('50');
    const buyer = await k.fundedUser('100');
    const { image } = await activeImage(owner.token, '限时分享');
    await share(owner.token, image.id, true);
    const order = json<Order>(
      await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Day', duration: 1, userImageId: image.id }, buyer.token),
    );
    await share(owner.token, image.id, false);
    const before = await k.cash(buyer.user.id);
    const paid = await post(s.app, `/order/api/v2.1/gpu/order/${order.orderUid}/pay`, { method: 'Balance' }, buyer.token);
    expect(json(paid)).toMatchObject({ status: 'Refunded' });
    expect(await k.cash(buyer.user.id)).toBe(before);
    const [o] = await s.ctx.db.select().from(orders).where(eq(orders.orderUid, order.orderUid));
    expect(o!.failReason).toMatch(/取消分享/);
    expect((await s.ctx.db.select().from(instances).where(eq(instances.userId, buyer.user.id))).length).toBe(0);
  });

  it('lets a child account see my images only with openYunBucket or image', async () => {
    const parent = await k.fundedUser('50');
    const { image } = await activeImage(parent.token, '主账号镜像');
    const child = await registerUser(s);
    await s.ctx.db.update(users).set({ isChild: true, parentId: parent.user.id, childName: 'ops', gpu: true }).where(eq(users.id, child.user.id));
    const denied = await get(s.app, IMAGES, child.token);
    expect(denied.statusCode).toBe(403);
    expect(json(denied)).toMatchObject({ code: 40300002 });
    expect((await get(s.app, '/upgpu/api/v2.1/disks', child.token)).statusCode).toBe(403);
    await s.ctx.db.update(users).set({ image: true }).where(eq(users.id, child.user.id));
    expect((await list(child.token)).items.map((i) => i.id)).toEqual([image.id]);
    expect((await get(s.app, '/upgpu/api/v2.1/disks', child.token)).statusCode).toBe(200);
    const [row] = await s.ctx.db.select().from(userImages).where(eq(userImages.id, image.id));
    expect(row!.userId).toBe(parent.user.id);
  });
});
