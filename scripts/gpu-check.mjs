// The API half of scripts/gpu-check.sh (read it first): `catalogue` prints a catalogue selling this
// host's card model; `run` buys one-card instances from the console the script started and checks
// what they see inside. Plain Node (fetch) and ssh2 from the workspace's node_modules.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ssh2 from 'ssh2';

const GPU_TYPE = 'host-gpu';
const IMAGE = 'host-system-gpu';

/** This host's cards as nvidia-smi lists them. */
function hostCards() {
  const csv = execFileSync('nvidia-smi', ['--query-gpu=name,memory.total,uuid', '--format=csv,noheader,nounits'], { encoding: 'utf8' });
  return csv
    .trim()
    .split('\n')
    .map((l) => l.split(',').map((f) => f.trim()))
    .map(([name, memoryMb, uuid]) => ({ name, memoryMb: Number(memoryMb), uuid }));
}

/** The shipped catalogue with a GPU type named for this host's cards, a host of them and an image of the host's own system. */
function catalogue() {
  const c = JSON.parse(readFileSync('server/catalogue/catalogue.json', 'utf8'));
  const cards = hostCards();
  const os = Object.fromEntries(
    readFileSync('/etc/os-release', 'utf8')
      .split('\n')
      .map((l) => /^(\w+)="?(.*?)"?$/.exec(l))
      .filter(Boolean)
      .map((m) => [m[1], m[2]]),
  );
  const name = cards[0].name.replace(/^NVIDIA\s+/, '').replace(/^GeForce\s+/, '');
  c.gpuTypes.push({ ...c.gpuTypes[0], id: GPU_TYPE, name, memoryGb: Math.round(cards[0].memoryMb / 1024), description: '本主机的 GPU（gpu-check）' });
  const room = c.rooms[0];
  c.hosts.push({
    ...c.hosts[0],
    id: 'gpu-check-01',
    name: 'GPU-CHECK-01',
    roomId: room.id,
    zone: room.zones[0],
    gpuTypeId: GPU_TYPE,
    gpuTotal: cards.length,
    gpuBusy: 0,
    cpuPerGpu: 2,
    memoryGbPerGpu: 4,
  });
  c.images.push({ id: IMAGE, kind: 'os', name: os.PRETTY_NAME ?? 'host', os: `${os.ID} ${os.VERSION_ID}`, forGpu: true, forCategories: ['Generic'] });
  c.settings = { ...c.settings, hostCpuOvercommit: 64, hostMemoryOvercommit: 16 };
  return c;
}

const base = process.env.GPU_CHECK_URL;

async function call(method, path, body, token) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** A new account through the register flow (its code from the dev outbox), credited 100 yuan by the operator tool. */
async function newUser() {
  const mobile = `139${String(Date.now()).slice(-8)}`;
  await call('POST', '/api/v1/users/verify/smscode', { mobile, scene: 'register' });
  const { items } = await call('GET', `/dev/outbox?to=${mobile}`);
  const { token } = await call('POST', '/userapi/api/v2.1/register', { mobile, code: items[0].code, password: 'Abcd1234', agreed: true });
  execFileSync('npx', ['tsx', 'server/src/cli/operator.ts', 'credit', mobile, '100', '--reason', 'gpu-check'], {
    env: { ...process.env, DATA_DIR: `${process.env.GPU_CHECK_WORK}/data` },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return token;
}

/** Buys a post-paid one-card instance and waits until it runs; its id and access details. */
async function buyOneCard(token) {
  const quote = await call('POST', '/infra/api/v2.1/gpu/order/price', { gpuTypeId: GPU_TYPE, gpuCount: 1, cycle: 'Usage', duration: 1 }, token);
  await call(
    'POST',
    '/infra/api/v2.1/gpu/order',
    { gpuTypeId: GPU_TYPE, gpuCount: 1, hostId: quote.placement.hostId, imageId: IMAGE, cycle: 'Usage', duration: 1 },
    token,
  );
  const { items } = await call('GET', '/order/api/v2.1/orders?pageSize=1', null, token);
  const id = items[0].resourceId;
  for (let i = 0; i < 180; i++) {
    const inst = await call('GET', `/upgpu/api/v2.1/instances/${id}`, null, token);
    if (inst.status === 'Running') return { id, access: inst.access };
    if (inst.status === 'Failed') throw new Error(`实例创建失败：${inst.lastError ?? ''}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error('实例 3 分钟内没有运行');
}

/** Runs commands inside over the SSH gateway: each one's exit code and output. */
async function shell(access) {
  const c = new ssh2.Client();
  await new Promise((resolve, reject) => {
    c.once('ready', resolve).once('error', reject);
    c.connect({ host: '127.0.0.1', port: access.sshPort, username: access.sshUser, password: access.sshPassword, readyTimeout: 20_000 });
  });
  const run = (command) =>
    new Promise((resolve, reject) =>
      c.exec(command, (err, ch) => {
        if (err) return reject(err);
        let out = '';
        let code = -1;
        ch.on('data', (d) => (out += d));
        ch.stderr.on('data', (d) => (out += d));
        ch.on('exit', (n) => (code = n));
        ch.on('close', () => resolve({ code, out }));
      }),
    );
  return { run, close: () => c.end() };
}

/** A device computation through the driver API: allocate 1 MiB, fill it on the card, copy it back, check it. */
const CUDA_PY = `
import ctypes, sys
cuda = ctypes.CDLL('libcuda.so.1')
def ok(r, what):
    if r != 0: sys.exit('%s failed: CUresult %d' % (what, r))
ok(cuda.cuInit(0), 'cuInit')
n = ctypes.c_int(); ok(cuda.cuDeviceGetCount(ctypes.byref(n)), 'cuDeviceGetCount')
dev = ctypes.c_int(); ok(cuda.cuDeviceGet(ctypes.byref(dev), 0), 'cuDeviceGet')
name = ctypes.create_string_buffer(128); ok(cuda.cuDeviceGetName(name, 128, dev), 'cuDeviceGetName')
ctx = ctypes.c_void_p(); ok(cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), 'cuCtxCreate')
ptr = ctypes.c_uint64(); ok(cuda.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20), 'cuMemAlloc')
ok(cuda.cuMemsetD32_v2(ptr, 0x12345678, 1 << 18), 'cuMemsetD32')
host = (ctypes.c_uint32 * (1 << 18))(); ok(cuda.cuMemcpyDtoH_v2(host, ptr, 1 << 20), 'cuMemcpyDtoH')
assert all(v == 0x12345678 for v in host), 'wrong values copied back'
lib = next((l.split()[-1] for l in open('/proc/self/maps') if 'libcuda.so' in l), '?')
print('CUDA OK devices=%d name=%s libcuda=%s' % (n.value, name.value.decode(), lib))
`;

async function run() {
  let failed = 0;
  const check = (ok, what, detail = '') => {
    console.log(`${ok ? 'PASS' : 'FAIL'}: ${what}${detail ? `\n${detail.trim()}` : ''}`);
    if (!ok) failed++;
  };
  const cards = hostCards();
  const token = await newUser();
  const first = await buyOneCard(token);
  const inside = await shell(first.access);
  const list = await inside.run('nvidia-smi -L');
  const listed = list.out.split('\n').filter((l) => /^GPU \d+:/.test(l));
  check(list.code === 0 && listed.length === 1, `实例内 nvidia-smi -L 恰好列出一张卡（本机 ${cards.length} 张）`, list.out);
  const devices = await inside.run('ls /dev | grep -cE "^nvidia[0-9]+$"');
  check(devices.out.trim() === '1', '实例内只有自己的一个 /dev/nvidiaN', devices.out);
  const proc = await inside.run('ls /proc/driver/nvidia/gpus | wc -l');
  check(proc.out.trim() === '1', '实例内 /proc/driver/nvidia/gpus 只有自己的卡', proc.out);
  const cuda = await inside.run(`python3 - <<'PY'\n${CUDA_PY}\nPY`);
  check(cuda.code === 0 && cuda.out.includes('CUDA OK devices=1'), '实例内用宿主驱动的 libcuda 完成 CUDA 计算', cuda.out);
  inside.close();
  if (cards.length > 1) {
    const second = await buyOneCard(token);
    const other = await shell(second.access);
    const list2 = await other.run('nvidia-smi -L');
    const uuid = (s) => /UUID: (GPU-[0-9a-f-]+)/.exec(s)?.[1];
    check(!!uuid(list2.out) && uuid(list2.out) !== uuid(list.out), '第二台实例得到另一张卡', list2.out);
    other.close();
  }
  console.log(failed ? `FAIL: ${failed} 项未通过` : 'PASS: GPU 检查全部通过');
  process.exit(failed ? 1 : 0);
}

if (process.argv[2] === 'catalogue') console.log(JSON.stringify(catalogue(), null, 2));
else if (process.argv[2] === 'run')
  run().catch((e) => {
    console.log(`FAIL: ${e.message}`);
    process.exit(1);
  });
else {
  console.error('usage: node scripts/gpu-check.mjs catalogue|run');
  process.exit(2);
}
