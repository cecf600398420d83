import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import type { DeleteImageResponse, Instance, Order, ReceivedImage, SharedImage, UserImage, UserImagePage } from '@console/contract';
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

  it('shows a saved image’s size, base and layers as the fleet keeps them (simulated figures, labelled)', async () => {
    const u = await k.fundedUser('50');
    const { image } = await activeImage(u.token, '看层');
    const item = (await list(u.token)).items.find((i) => i.id === image.id)!;
    const storage = item.storage!;
    expect(storage.simulated).toBe(true);
    expect(storage.sizeBytes).toBe(item.sizeGb! * 1024 ** 3);
    expect(storage.unpackedBytes).toBeGreaterThan(storage.sizeBytes);
    expect(storage.base).toMatchObject({ name: 'PyTorch 2.3.0', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect(storage.layers).toHaveLength(4);
    expect(storage.layers.reduce((sum, l) => sum + l.sizeBytes, 0)).toBe(storage.sizeBytes);
    expect(storage.createdAt).not.toBeNull();
    // The detail answers the same; an image still being built has none yet.
    expect(json<UserImage>(await get(s.app, `${IMAGES}/${image.id}`, u.token)).storage).toEqual(storage);
    const { id } = await k.stopped(u.token);
    expect(json<UserImage>(await save(u.token, id, '制作中')).storage).toBeNull();
    await k.settle(DELAYS.saveImage);
  });

  it('deletes an image from the host and says what that frees; refused while an instance is being created from it', async () => {
    const u = await k.fundedUser('80');
    const { image } = await activeImage(u.token, '要删除的');
    const order = json<Order>(await post(s.app, GPU_ORDER, { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1, userImageId: image.id }, u.token));
    const inst = await k.instance(u.token, order.resourceId!);
    expect(inst.status).toBe('Pending');
    const refused = await del(s, `${IMAGES}/${image.id}`, u.token);
    expect(refused.statusCode).toBe(409);
    expect(json(refused)).toMatchObject({ code: 40921002 });
    expect(await sim.imageInfo(image.id)).not.toBeNull();

    await k.settle(DELAYS.create);
    await k.settle(DELAYS.boot);
    expect((await k.instance(u.token, inst.id)).status).toBe('Running');
    const res = await del(s, `${IMAGES}/${image.id}`, u.token);
    expect(res.statusCode, res.body).toBe(200);
    const done = json<DeleteImageResponse>(res);
    expect(done).toMatchObject({ ok: true, simulated: true });
    expect(done.freedBytes).toBeGreaterThan(0);
    expect(done.message).toMatch(/已不再被引用，将在镜像清理时释放（模拟）/);
    // The fleet no longer keeps it; the instance made from it still runs and still names it.
    expect(await sim.imageInfo(image.id)).toBeNull();
    expect(await k.instance(u.token, inst.id)).toMatchObject({ status: 'Running', userImageName: '要删除的' });
    expect(json(await del(s, `${IMAGES}/${image.id}`, u.token))).toMatchObject({ code: 40421001 });
  });

  describe('共享镜像 by code', () => {
    const RECEIVED = `${IMAGES}/received`;
    const makeCode = (token: string, id: string) => post(s.app, `${IMAGES}/${id}/share-code`, undefined, token);
    const redeem = (token: string, code: unknown) => post(s.app, RECEIVED, { code }, token);
    const received = async (token: string) => json<{ items: ReceivedImage[] }>(await get(s.app, RECEIVED, token)).items;
    const quote = (token: string, userImageId: string) =>
      post(s.app, '/infra/api/v2.1/gpu/order/user/price', { gpuTypeId: 'rtx4090', gpuCount: 1, cycle: 'Usage', duration: 1, userImageId }, token);

    it('lets another account add an image by its code and create instances from it, read only; revoking ends that', async () => {
      const owner = await k.fundedUser('50');
      const friend = await k.fundedUser('50');
      const stranger = await k.fundedUser('50');
      const { image } = await activeImage(owner.token, '共享环境');

      // One live code per image: asking twice at once gives the same one.
      const [a, b] = await Promise.all([makeCode(owner.token, image.id), makeCode(owner.token, image.id)]);
      const code = json<UserImage>(a).shareCode!;
      expect(code).toMatch(/^[23456789ABCDEFGHJKMNPQRSTVWXYZ]{10}$/);
      expect(json<UserImage>(b).shareCode).toBe(code);
      expect((await list(owner.token)).items.find((i) => i.id === image.id)).toMatchObject({ shareCode: code, shareCodeUsers: 0 });

      // Not shared by link: the friend cannot use it before entering the code.
      expect(json(await quote(friend.token, image.id))).toMatchObject({ code: 40421002 });
      // Entered as people type it: lower case, grouped with a dash or spaces.
      const typed = `${code.slice(0, 5).toLowerCase()}-${code.slice(5, 8)} ${code.slice(8).toLowerCase()}`;
      const added = await redeem(friend.token, typed);
      expect(added.statusCode, added.body).toBe(200);
      expect(json<ReceivedImage>(added)).toMatchObject({
        id: image.id,
        name: '共享环境',
        baseImageName: 'PyTorch 2.3.0',
        owner: expect.stringContaining('****'),
      });
      expect((await received(friend.token)).map((i) => i.id)).toEqual([image.id]);
      expect((await redeem(friend.token, code)).statusCode).toBe(200);
      expect((await received(friend.token)).length).toBe(1);
      expect((await list(owner.token)).items.find((i) => i.id === image.id)!.shareCodeUsers).toBe(1);
      // Not in the friend's own images (nor in its count).
      expect((await list(friend.token)).items.map((i) => i.id)).not.toContain(image.id);
      expect((await quote(friend.token, image.id)).statusCode).toBe(200);

      // Read only: no rename, share, code or delete.
      for (const res of [
        await put(s.app, `${IMAGES}/${image.id}/name`, { name: '改名' }, friend.token),
        await share(friend.token, image.id, true),
        await makeCode(friend.token, image.id),
        await del(s, `${IMAGES}/${image.id}`, friend.token),
      ]) {
        expect(res.statusCode).toBe(403);
        expect(json(res)).toMatchObject({ code: 40321001 });
      }
      // Someone it was never shared with learns nothing.
      expect(json(await get(s.app, `${IMAGES}/${image.id}`, stranger.token))).toMatchObject({ code: 40421001 });
      expect(json(await del(s, `${IMAGES}/${image.id}`, stranger.token))).toMatchObject({ code: 40421001 });
      expect(json(await post(s.app, `${IMAGES}/${image.id}/share-code`, undefined, stranger.token))).toMatchObject({ code: 40421001 });
      expect(json(await del(s, `${RECEIVED}/${image.id}`, stranger.token))).toMatchObject({ code: 40421001 });

      // The owner's own code is refused, and so is nonsense.
      const own = await redeem(owner.token, code);
      expect(own.statusCode).toBe(400);
      expect(json(own)).toMatchObject({ code: 40021005 });
      const unknown = await redeem(stranger.token, 'ABCDEFGHJK');
      expect(unknown.statusCode).toBe(404);
      expect(json(unknown)).toMatchObject({ code: 40421003 });
      for (const bad of ['', 'ABC', 'ABCDEFGHJ0', 12345, null]) expect(json(await redeem(stranger.token, bad))).toMatchObject({ code: 40000001 });
      expect(json(await post(s.app, RECEIVED, {}, stranger.token))).toMatchObject({ code: 40000001 });
      expect(json(await post(s.app, `${IMAGES}/not-a-uuid/share-code`, undefined, owner.token))).toMatchObject({ code: 40000001 });

      // Revoked: the friend's list drops it, a new instance is refused, the old code answers revoked.
      const revoked = json<UserImage>(await del(s, `${IMAGES}/${image.id}/share-code`, owner.token));
      expect(revoked).toMatchObject({ shareCode: null, shareCodeUsers: 0 });
      expect(await received(friend.token)).toEqual([]);
      expect(json(await quote(friend.token, image.id))).toMatchObject({ code: 40421002 });
      expect(json(await redeem(stranger.token, code))).toMatchObject({ code: 40421003 });
      expect(json(await get(s.app, `${IMAGES}/${image.id}`, friend.token))).toMatchObject({ code: 40421001 });

      // A new code is a new one; the friend needs it to use the image again.
      const again = json<UserImage>(await makeCode(owner.token, image.id)).shareCode!;
      expect(again).not.toBe(code);
      expect(await received(friend.token)).toEqual([]);
      expect((await redeem(friend.token, again)).statusCode).toBe(200);
      // The friend may drop it from their list; the owner's image stays.
      expect(json(await del(s, `${RECEIVED}/${image.id}`, friend.token))).toEqual({ ok: true });
      expect(await received(friend.token)).toEqual([]);
      expect((await get(s.app, `${IMAGES}/${image.id}`, owner.token)).statusCode).toBe(200);
    });

    it('refuses a code for an image not yet made, and ends every code when the image is deleted', async () => {
      const owner = await k.fundedUser('50');
      const friend = await k.fundedUser('50');
      const { id } = await k.stopped(owner.token);
      const building = json<UserImage>(await save(owner.token, id, '还在做'));
      expect(json(await makeCode(owner.token, building.id))).toMatchObject({ code: 40021004 });
      await k.settle(DELAYS.saveImage);
      const code = json<UserImage>(await makeCode(owner.token, building.id)).shareCode!;
      expect((await redeem(friend.token, code)).statusCode).toBe(200);
      expect((await del(s, `${IMAGES}/${building.id}`, owner.token)).statusCode).toBe(200);
      expect(await received(friend.token)).toEqual([]);
      expect(json(await redeem(friend.token, code))).toMatchObject({ code: 40421003 });
    });
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
