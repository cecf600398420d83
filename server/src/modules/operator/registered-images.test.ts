/**
 * 镜像登记 (registered-images.ts) without REGISTRY_URL: a reference is checked in the host's
 * layout before it is recorded; what is registered is a catalogue image (an application's also a
 * 镜像应用 running the operator's command) sold like the stock ones; duplicates, missing images and
 * removal while an instance uses it are refused with their codes; operators only. The registry's
 * side (pull, push, digest) is in oci/registry.test.ts, against a real distribution server.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { API, ERRORS, type OperatorImage, type OperatorImageList } from '@console/contract';
import { del, get, json, post, registerUser } from '../../../test/harness.js';
import { GPU_ORDER, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import type { TestServer } from '../../../test/harness.js';
import { localComputeDir } from '../../drivers/compute/index.js';
import { OciLayout, type OciImageInfo } from '../../drivers/compute/local/oci/layout.js';
import { users } from '../../db/schema.js';

let s: TestServer;
instanceSuite((server) => (s = server));
const kit = instanceKit(() => s);

describe('镜像登记 (registered images)', () => {
  let op: { token: string };
  let tiny: OciImageInfo;
  let layout: OciLayout;
  beforeAll(async () => {
    const operator = await registerUser(s);
    await s.ctx.db.update(users).set({ isOperator: true }).where(eq(users.id, operator.user.id));
    op = operator;
    // An image the operator imported into this host's layout by hand (skopeo copy … oci:…).
    layout = await OciLayout.open(path.join(localComputeDir(s.dataDir), 'oci'));
    const tree = mkdtempSync(path.join(s.dataDir, 'tree-'));
    mkdirSync(path.join(tree, 'etc'));
    writeFileSync(path.join(tree, 'etc', 'os-release'), 'ID=operator\n');
    execFileSync('tar', ['-c', '-f', `${tree}.tar`, '-C', tree, '.']);
    tiny = await layout.importImage({ ref: 'ai/cuda-pytorch:2.3', layers: [`${tree}.tar`] });
  });

  const list = async () => {
    const res = await get(s.app, API.operatorImages, op.token);
    expect(res.statusCode, res.body).toBe(200);
    return json<OperatorImageList>(res);
  };
  const register = (body: Record<string, unknown>, token = op.token) => post(s.app, API.operatorImages, body, token);
  const system = { reference: 'ai/cuda-pytorch:2.3', name: 'PyTorch 2.3 · 运营方', kind: 'system', categories: ['Gpu', 'Generic'] };

  it('is the operator’s alone', async () => {
    const user = await registerUser(s);
    expect(json(await register(system, user.token)).code).toBe(ERRORS.PERMISSION_DENIED.code);
    expect(json(await get(s.app, API.operatorImages, user.token)).code).toBe(ERRORS.PERMISSION_DENIED.code);
  });

  it('refuses a reference the host does not have, and one that is not a reference', async () => {
    const missing = await register({ ...system, reference: 'ai/absent:1' });
    expect(missing.statusCode).toBe(400);
    expect(json(missing)).toMatchObject({ code: ERRORS.OPERATOR_IMAGE_MISSING.code });
    expect(json(missing).detail).toContain('ai/absent:1');
    const bad = await register({ ...system, reference: 'Not A Reference' });
    expect(json(bad).code).toBe(ERRORS.VALIDATION_FAILED.code);
    const noPort = await register({ ...system, kind: 'application' });
    expect(json(noPort).code).toBe(ERRORS.VALIDATION_FAILED.code);
    expect((await list()).items).toEqual([]);
  });

  it('registers an image it finds, offers it in the catalogue, refuses it twice', async () => {
    const res = await register(system);
    expect(res.statusCode, res.body).toBe(200);
    const image = json<OperatorImage>(res);
    expect(image).toMatchObject({ id: 'reg-ai-cuda-pytorch-2-3', digest: tiny.digest, source: 'layout', ready: true, inUse: 0, kind: 'system' });
    expect((await list()).items.map((i) => i.id)).toEqual([image.id]);
    const market = await s.ctx.catalogueStore.get();
    expect(market.images.find((i) => i.id === image.id)).toMatchObject({ name: system.name, oci: 'ai/cuda-pytorch:2.3', forCategories: ['Gpu', 'Generic'] });

    const again = await register({ ...system, name: '另一个名称' });
    expect(again.statusCode).toBe(409);
    expect(json(again).code).toBe(ERRORS.OPERATOR_IMAGE_TAKEN.code);
  });

  it('an application runs the operator’s command on its port: an image of its own in the layout, a 镜像应用 in the catalogue', async () => {
    await layout.importImage({ ref: 'ai/sd-webui:1.9', base: tiny.digest, layers: [] });
    const res = await register({
      reference: 'ai/sd-webui:1.9',
      name: 'SD WebUI 1.9',
      kind: 'application',
      port: 7860,
      minGpuMemoryGb: 8,
      command: 'python3 launch.py --listen --port 7860',
    });
    expect(res.statusCode, res.body).toBe(200);
    const app = json<OperatorImage>(res);
    const own = await layout.resolve('registered/reg-ai-sd-webui-1-9:1');
    expect(own?.config).toMatchObject({ cmd: ['/bin/sh', '-c', 'python3 launch.py --listen --port 7860'], exposedPorts: [7860] });
    expect(own?.layers.map((l) => l.digest)).toEqual(tiny.layers.map((l) => l.digest));
    const market = await s.ctx.catalogueStore.get();
    expect(market.applications.find((a) => a.id === app.id)).toMatchObject({ name: 'SD WebUI 1.9', defaultPort: 7860, imageId: app.id, minGpuMemoryGb: 8 });
    expect(market.images.find((i) => i.id === app.id)?.oci).toBe('registered/reg-ai-sd-webui-1-9:1');

    // Removed: gone from the catalogue and its own image from the layout; the operator's image stays.
    expect((await del(s.app, API.operatorImage.replace(':id', app.id), op.token)).statusCode).toBe(200);
    expect((await s.ctx.catalogueStore.get()).applications.some((a) => a.id === app.id)).toBe(false);
    expect(await layout.resolve('registered/reg-ai-sd-webui-1-9:1')).toBeNull();
    expect(await layout.resolve('ai/sd-webui:1.9')).not.toBeNull();
  });

  it('is not removed while an instance uses it', async () => {
    const buyer = await kit.fundedUser('100');
    const hostId = await kit.pickHost();
    const order = await post(
      s.app,
      GPU_ORDER,
      { gpuTypeId: 'rtx4090', gpuCount: 1, hostId, imageId: 'reg-ai-cuda-pytorch-2-3', cycle: 'Usage', duration: 1 },
      buyer.token,
    );
    expect(order.statusCode, order.body).toBe(200);
    expect((await list()).items.find((i) => i.id === 'reg-ai-cuda-pytorch-2-3')?.inUse).toBe(1);
    const refused = await del(s.app, API.operatorImage.replace(':id', 'reg-ai-cuda-pytorch-2-3'), op.token);
    expect(refused.statusCode).toBe(409);
    expect(json(refused).code).toBe(ERRORS.OPERATOR_IMAGE_IN_USE.code);
    const unknown = await del(s.app, API.operatorImage.replace(':id', 'reg-nothing'), op.token);
    expect(json(unknown).code).toBe(ERRORS.OPERATOR_IMAGE_NOT_FOUND.code);
  });
});
