/**
 * The deployment checked offline (no cluster, no kubectl): deploy/k8s assembled as `kubectl apply -k`
 * would (its resources, the generated catalogue ConfigMap, the namespace and the image override),
 * every object validated against the Kubernetes API's schemas (kubernetes-models), then the console's
 * own rules: probes on /readyz and /livez, settings the server knows and accepts together, a Secret of
 * placeholders only, the image the build script makes. Also deploy/runtime-modules.ts, which picks
 * the image's node_modules. Run by the server's vitest (server/vitest.config.ts includes deploy/).
 */
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { loadConfig } from '../server/src/config.js';
import { readCatalogueFile } from '../server/src/modules/catalogue/index.js';
import { resolveFrom, runtimeModules, type Lockfile } from './runtime-modules.js';

const deployDir = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(deployDir);
const k8sDir = path.join(deployDir, 'k8s');
const read = (...p: string[]) => readFileSync(path.join(...p), 'utf8');

type Obj = Record<string, any>;

const MODELS: Record<string, new (data: Obj) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/Ingress': Ingress,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

const CLUSTER_SCOPED = new Set(['Namespace']);

/** What `kubectl kustomize deploy/k8s` makes, for the features kustomization.yaml uses (a test below fails on any other). */
function assemble(): { kustomization: Obj; objects: Obj[] } {
  const kustomization = parseYaml(read(k8sDir, 'kustomization.yaml')) as Obj;
  const objects: Obj[] = [];
  for (const file of kustomization.resources as string[]) {
    for (const doc of parseAllDocuments(read(k8sDir, file))) {
      expect(doc.errors, file).toEqual([]);
      const o = doc.toJS() as Obj | null;
      if (o) objects.push(o);
    }
  }
  for (const g of (kustomization.configMapGenerator ?? []) as Obj[]) {
    const data: Record<string, string> = {};
    for (const f of g.files as string[]) {
      const [key, file] = f.includes('=') ? f.split('=', 2) : [path.basename(f), f];
      data[key!] = read(k8sDir, file!);
    }
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name }, data });
  }
  for (const o of objects) {
    if (kustomization.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = kustomization.namespace;
    for (const c of podSpecOf(o)?.containers ?? []) {
      const [name, tag] = splitImage(c.image);
      const override = (kustomization.images ?? []).find((i: Obj) => i.name === name);
      if (override) c.image = `${override.newName ?? name}:${override.newTag ?? tag}`;
    }
  }
  return { kustomization, objects };
}

function podSpecOf(o: Obj): Obj | undefined {
  return o.kind === 'Deployment' || o.kind === 'Job' ? o.spec.template.spec : undefined;
}

function splitImage(image: string): [string, string] {
  const i = image.lastIndexOf(':');
  return i > image.lastIndexOf('/') ? [image.slice(0, i), image.slice(i + 1)] : [image, 'latest'];
}

/** The variables server/src/config.ts reads: the keys of its envSchema (one `NAME:` per line, as Prettier writes them). */
function configVariables(): Set<string> {
  const src = read(repo, 'server/src/config.ts');
  const block = src.slice(src.indexOf('const envSchema = z.object({'), src.indexOf('\n});', src.indexOf('const envSchema')));
  return new Set([...block.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!));
}

const { kustomization, objects } = assemble();
const find = (kind: string, name: string) => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`没有 ${kind}/${name}`);
  return o;
};
const deployment = find('Deployment', 'console');
const job = find('Job', 'console-migrate');
const config = find('ConfigMap', 'console-config');
const secret = find('Secret', 'console-secrets');
const container = deployment.spec.template.spec.containers[0] as Obj;
const portOf = (c: Obj, name: string) => (c.ports as Obj[]).find((p) => p.name === name)?.containerPort as number | undefined;
const buildScript = read(deployDir, 'build-image.sh');
const imageName = /^IMAGE_NAME=(\S+)$/m.exec(buildScript)?.[1];
const version = (JSON.parse(read(repo, 'package.json')) as { version: string }).version;

describe('deploy/k8s as kubectl apply -k makes it', () => {
  it('lists every manifest of the folder, and uses only the kustomize features assemble() knows', () => {
    const files = readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
    expect([...(kustomization.resources as string[])].sort()).toEqual(files.sort());
    expect(Object.keys(kustomization).sort()).toEqual(['apiVersion', 'configMapGenerator', 'images', 'kind', 'labels', 'namespace', 'resources']);
  });

  it('holds valid Kubernetes objects, each of a kind the deployment means to have', () => {
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(() => new Model!(o).validate(), `${o.kind}/${o.metadata?.name}`).not.toThrow();
    }
    const kinds = new Set(objects.map((o) => o.kind));
    for (const k of ['Deployment', 'Service', 'Ingress', 'ConfigMap', 'Secret', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Job'])
      expect(kinds, k).toContain(k);
  });

  it('a broken object is refused by the validation (a string where a number goes)', () => {
    const broken = structuredClone(deployment);
    broken.spec.replicas = 'three';
    expect(() => new Deployment(broken).validate()).toThrow();
  });

  it('runs three replicas that the orchestrator probes on /readyz and /livez, non-root, with 30 s to stop', () => {
    expect(deployment.spec.replicas).toBe(3);
    const pod = deployment.spec.template.spec;
    expect(pod.terminationGracePeriodSeconds).toBe(30);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.readinessProbe.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toMatchObject({ path: '/livez', port: 'http' });
    expect(container.startupProbe.httpGet.path).toBe('/livez');
    expect(portOf(container, 'http')).toBe(Number(config.data.PORT));
    expect(portOf(container, 'machines')).toBe(Number(config.data.MACHINE_PORT));
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources.limits.memory).toEqual(expect.any(String));
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    // A read-only root: what the server writes (tsx's cache in /tmp, DATA_DIR) is mounted.
    const mounts = (container.volumeMounts as Obj[]).map((m) => m.mountPath);
    expect(mounts).toEqual(expect.arrayContaining(['/tmp', '/data']));
  });

  it('takes its settings from the ConfigMap and the Secret; DATABASE_URL and SESSION_SECRET from the Secret', () => {
    for (const pod of [deployment, job].map((o) => o.spec.template.spec)) {
      for (const c of pod.containers as Obj[]) {
        expect(c.envFrom).toEqual([{ configMapRef: { name: 'console-config' } }, { secretRef: { name: 'console-secrets' } }]);
        expect(c.env).toBeUndefined();
      }
    }
    for (const k of ['DATABASE_URL', 'SESSION_SECRET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'REDIS_URL']) {
      expect(Object.keys(secret.stringData), k).toContain(k);
      expect(Object.keys(config.data), k).not.toContain(k);
    }
    expect(config.data).toMatchObject({ STORAGE_DRIVER: 's3', HOST: '0.0.0.0' });
    for (const k of ['S3_ENDPOINT', 'S3_REGION', 'S3_BUCKET', 'S3_FORCE_PATH_STYLE']) expect(Object.keys(config.data), k).toContain(k);
  });

  it('names only variables the server reads', () => {
    const known = configVariables();
    expect(known.size).toBeGreaterThan(50);
    const unknown = [...Object.keys(config.data), ...Object.keys(secret.stringData)].filter((k) => !known.has(k));
    expect(unknown).toEqual([]);
  });

  it('is a configuration the server starts with once the placeholders are filled in: S3, agents, no dev tools', () => {
    const filled: Record<string, string> = {
      SESSION_SECRET: Buffer.alloc(32, 7).toString('base64url'),
      COMPUTE_AGENT_SECRET: 'x'.repeat(40),
      SSH_HOST_KEY: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    };
    const env = { ...config.data } as Record<string, string>;
    for (const [k, v] of Object.entries(secret.stringData as Record<string, string>)) env[k] = filled[k] ?? v.replaceAll('REPLACE_ME', 'filled');
    const c = loadConfig(env);
    expect(c).toMatchObject({ HOST: '0.0.0.0', PORT: 8080, STORAGE_DRIVER: 's3', COMPUTE_DRIVER: 'agent', devTools: false, seedDemo: false });
    expect(c.DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(c.catalogueFile).toBe(config.data.CATALOGUE_FILE);
    // A stop (drain, requests in flight, leases) ends before Kubernetes kills the pod.
    expect(c.SHUTDOWN_TIMEOUT_MS / 1000).toBeLessThan(deployment.spec.template.spec.terminationGracePeriodSeconds);
  });

  it('keeps only placeholders in the Secret template', () => {
    expect(secret.data).toBeUndefined(); // base64 values would hide what they hold
    for (const [k, v] of Object.entries(secret.stringData as Record<string, string>)) {
      expect(v, k).toContain('REPLACE_ME');
      if (/^[a-z]+:\/\//.test(v)) {
        const u = new URL(v);
        if (u.password) expect(u.password, `${k} 的密码`).toMatch(/^REPLACE_ME/);
        expect(u.hostname, `${k} 的主机`).toMatch(/^replace_me/i);
      } else {
        expect(v, k).toMatch(/^REPLACE_ME[A-Z0-9_]*$/);
      }
    }
  });

  it('mounts the catalogue ConfigMap where CATALOGUE_FILE points, holding a catalogue the server accepts', () => {
    const file = config.data.CATALOGUE_FILE as string;
    const volume = (deployment.spec.template.spec.volumes as Obj[]).find((v) => v.configMap?.name === 'console-catalogue');
    const mount = (container.volumeMounts as Obj[]).find((m) => m.name === volume?.name);
    expect(mount?.mountPath).toBe(path.dirname(file));
    const catalogue = find('ConfigMap', 'console-catalogue');
    expect(Object.keys(catalogue.data)).toEqual([path.basename(file)]);
    expect(() => readCatalogueFile(path.join(k8sDir, 'catalogue.json'), {})).not.toThrow();
  });

  // kustomize reads files under its own folder only, hence the copy; an operator edits it and raises its "version".
  it("ships the console's own catalogue, not a stale copy of it", () => {
    expect(JSON.parse(read(k8sDir, 'catalogue.json'))).toEqual(JSON.parse(read(path.join(k8sDir, '../../server/catalogue'), 'catalogue.json')));
  });

  it("runs the build script's image, at package.json's version, pushed under the name kustomization.yaml gives", () => {
    expect(imageName).toBe('console/console');
    const raw = parseAllDocuments(read(k8sDir, 'deployment.yaml'))[0]!.toJS() as Obj;
    expect(raw.spec.template.spec.containers[0].image).toBe(`${imageName}:${version}`);
    expect(kustomization.images).toEqual([expect.objectContaining({ name: imageName, newTag: version })]);
    const [name] = splitImage(container.image);
    expect(name).toBe(kustomization.images[0].newName);
    expect(job.spec.template.spec.containers[0].image).toBe(container.image);
  });

  it('migrates with the migration CLI, which npm run db:migrate runs too', () => {
    const args = job.spec.template.spec.containers[0].args as string[];
    expect(args).toEqual(['/usr/local/bin/node', '--import', 'tsx', 'server/src/cli/migrate.ts']);
    expect(readdirSync(path.join(repo, 'server/src/cli'))).toContain('migrate.ts');
    expect((JSON.parse(read(repo, 'server/package.json')) as { scripts: Record<string, string> }).scripts['db:migrate']).toBe('tsx src/cli/migrate.ts');
    expect(buildScript).toContain('--config.cmd server/src/main.ts');
    expect(job.spec.template.spec.restartPolicy).not.toBe('Always');
  });

  it('routes the Service and the Ingress to the pods, websockets held for an hour', () => {
    const pods = deployment.spec.template.metadata.labels as Obj;
    const services = objects.filter((o) => o.kind === 'Service');
    for (const s of services) {
      expect(pods).toMatchObject(s.spec.selector);
      for (const p of s.spec.ports as Obj[]) expect(portOf(container, p.targetPort), `${s.metadata.name} ${p.name}`).toBeDefined();
    }
    const ingress = find('Ingress', 'console');
    const a = ingress.metadata.annotations as Record<string, string>;
    expect(Number(a['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(3600);
    expect(Number(a['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(3600);
    expect(a['nginx.ingress.kubernetes.io/proxy-body-size']).toBeDefined();
    for (const rule of ingress.spec.rules as Obj[])
      for (const p of rule.http.paths as Obj[]) {
        const svc = find('Service', p.backend.service.name);
        expect((svc.spec.ports as Obj[]).map((x) => x.name)).toContain(p.backend.service.port.name);
      }
    const hosts = (ingress.spec.rules as Obj[]).map((r) => r.host);
    expect(hosts).toContain(new URL(config.data.PUBLIC_BASE_URL).hostname);
    expect(hosts).toContain(new URL(config.data.MACHINE_BASE_URL.replace('{id}', '*')).hostname);
  });

  it('keeps two replicas through a disruption and scales the Deployment on CPU from three', () => {
    const pdb = find('PodDisruptionBudget', 'console');
    expect(deployment.spec.template.metadata.labels).toMatchObject(pdb.spec.selector.matchLabels);
    const allowed = pdb.spec.maxUnavailable ?? deployment.spec.replicas - pdb.spec.minAvailable;
    expect(deployment.spec.replicas - allowed).toBeGreaterThanOrEqual(2);
    const hpa = find('HorizontalPodAutoscaler', 'console');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'console' });
    expect(hpa.spec.minReplicas).toBe(deployment.spec.replicas);
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
  });
});

describe('runtime-modules: the node_modules of the image', () => {
  const lock: Lockfile = {
    lockfileVersion: 3,
    packages: {
      '': {},
      server: { dependencies: { a: '1', '@console/contract': '0' } },
      contract: { dependencies: { z: '1' } },
      'node_modules/@console/contract': { link: true, resolved: 'contract' },
      'node_modules/a': { dependencies: { b: '2' }, optionalDependencies: { 'b-linux': '2', 'b-darwin': '2' } },
      'node_modules/a/node_modules/b': {},
      'node_modules/b': {},
      'node_modules/b-linux': {},
      'node_modules/b-darwin': {},
      'node_modules/z': {},
      'node_modules/vitest': { dependencies: { b: '1' } },
      'node_modules/tsx': { dependencies: { esbuild: '1' } },
      'node_modules/esbuild': {},
    },
  };

  it('resolves as Node does: the nearest node_modules first', () => {
    expect(resolveFrom(lock, 'node_modules/a', 'b')).toBe('node_modules/a/node_modules/b');
    expect(resolveFrom(lock, 'node_modules/vitest', 'b')).toBe('node_modules/b');
    expect(resolveFrom(lock, 'server', 'z')).toBe('node_modules/z');
    expect(resolveFrom(lock, 'server', 'nope')).toBeNull();
  });

  it("takes the workspaces' dependencies through links, installed optional ones, and tsx; leaves dev tools out", () => {
    const got = runtimeModules(lock, { has: (k) => k !== 'node_modules/b-darwin' });
    expect(got).toEqual([
      'node_modules/@console/contract',
      'node_modules/a',
      'node_modules/a/node_modules/b',
      'node_modules/b-linux',
      'node_modules/esbuild',
      'node_modules/tsx',
      'node_modules/z',
    ]);
  });

  it('refuses a lockfile that lacks a required dependency', () => {
    const broken = structuredClone(lock);
    delete broken.packages['node_modules/z'];
    expect(() => runtimeModules(broken)).toThrow(/z/);
  });

  it("on this repository's lockfile: the server's packages and tsx's own esbuild, no test or web packages", () => {
    const real = JSON.parse(read(repo, 'package-lock.json')) as Lockfile;
    const got = runtimeModules(real, { has: (k) => !/\/@esbuild\/(?!linux-x64)|\/@img\/sharp-(?!linux-x64|libvips-linux-x64)/.test(k) });
    expect(got).toEqual(expect.arrayContaining(['node_modules/fastify', 'node_modules/pg', 'node_modules/tsx', 'node_modules/@console/contract']));
    const tsxEsbuild = resolveFrom(real, 'node_modules/tsx', 'esbuild')!;
    expect(got).toContain(tsxEsbuild);
    for (const dev of [
      'node_modules/vitest',
      'node_modules/react',
      'node_modules/antd',
      'node_modules/eslint',
      'node_modules/typescript',
      'node_modules/s3rver',
    ])
      expect(got).not.toContain(dev);
  });
});
