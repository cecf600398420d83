/**
 * The boundary rules of DESIGN.md fail on the imports they exist to stop, run through the project's
 * real ESLint configuration (so a change to eslint.config.js that turns them off fails here).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: root });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('module boundaries', () => {
  it("refuses a module reading another module's table", async () => {
    const found = await problems('server/src/modules/orders/probe.ts', "import { users } from '../users/schema.js';\nexport const t = users;\n");
    expect(found).toEqual([expect.stringMatching(/^console\/module-boundaries: users 模块的表只能由 users 自己读写/)]);
  });

  it('refuses the whole schema outside the database layer', async () => {
    const found = await problems('server/src/modules/orders/probe.ts', "import { users } from '../../db/schema.js';\nexport const t = users;\n");
    expect(found).toEqual([expect.stringMatching(/^console\/module-boundaries: 不要引用整个 db\/schema/)]);
  });

  it("refuses another module's internal file, and takes its public entry", async () => {
    expect(await problems('server/src/modules/orders/probe.ts', "import { priceKey } from '../catalogue/store.js';\nexport const k = priceKey;\n")).toEqual([
      expect.stringMatching(/catalogue\/store\.ts 是 catalogue 模块的内部文件/),
    ]);
    expect(await problems('server/src/modules/orders/probe.ts', "import { priceKey } from '../catalogue/index.js';\nexport const k = priceKey;\n")).toEqual([]);
  });

  it('lets a module use its own tables, and a table name another module’s in a foreign key', async () => {
    expect(await problems('server/src/modules/orders/probe.ts', "import { orders } from './schema.js';\nexport const t = orders;\n")).toEqual([]);
    expect(await problems('server/src/modules/orders/schema.ts', "import { users } from '../users/schema.js';\nexport const t = users;\n")).toEqual([]);
  });

  it('keeps the packages one-way: web and contract never reach into the server', async () => {
    expect(await problems('web/src/pages/probe.ts', "import { buildApp } from '../../../server/src/app.js';\nexport const b = buildApp;\n")).toEqual([
      expect.stringMatching(/web 不能引用 server 的文件/),
    ]);
    expect(await problems('contract/src/probe.ts', "export * from '@console/server';\n")).toEqual([expect.stringMatching(/contract 不能依赖 server/)]);
  });
});

describe('import cycles', () => {
  const dir = mkdtempSync(path.join(root, 'server/src/cycle-probe-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const ruleIds = (r: ESLint.LintResult) => r.messages.map((m) => m.ruleId);

  it('refuses two files that import each other; import-x leaves type-only imports to console/no-cycle', async () => {
    writeFileSync(path.join(dir, 'a.ts'), "import { b } from './b.js';\nexport const a = () => b;\n");
    writeFileSync(path.join(dir, 'b.ts'), "import { a } from './a.js';\nexport const b = () => a;\n");
    writeFileSync(path.join(dir, 'c.ts'), "import type { d } from './d.js';\nexport const c = (x: typeof d) => x;\n");
    writeFileSync(path.join(dir, 'd.ts'), "import { c } from './c.js';\nexport const d = c;\n");
    const [a, , c] = await eslint.lintFiles(['a.ts', 'b.ts', 'c.ts', 'd.ts'].map((f) => path.join(dir, f)));
    expect(ruleIds(a!)).toEqual(['import-x/no-cycle', 'console/no-cycle']);
    expect(ruleIds(c!)).toEqual(['console/no-cycle']);
  });

  it('names the whole cycle, through type-only imports and re-exports, and passes a one-way chain', async () => {
    writeFileSync(path.join(dir, 'e.ts'), "import type { G } from './f.js';\nexport type E = G;\n");
    writeFileSync(path.join(dir, 'f.ts'), "export type { G } from './g.js';\n");
    writeFileSync(path.join(dir, 'g.ts'), "import type { E } from './e.js';\nexport type G = { e?: E };\n");
    writeFileSync(path.join(dir, 'h.ts'), "import type { E } from './e.js';\nexport type H = E;\n");
    const [e, f, g, h] = await eslint.lintFiles(['e.ts', 'f.ts', 'g.ts', 'h.ts'].map((f) => path.join(dir, f)));
    const probe = path.basename(dir);
    expect(e!.messages.map((m) => m.message)).toEqual([`循环依赖：${probe}/e.ts → ${probe}/f.ts → ${probe}/g.ts → ${probe}/e.ts`]);
    expect(ruleIds(f!)).toEqual(['console/no-cycle']);
    expect(ruleIds(g!)).toEqual(['console/no-cycle']);
    expect(h!.messages).toEqual([]);
  });

  it('lets tests import anything', async () => {
    writeFileSync(path.join(dir, 'i.ts'), "import type { J } from './i.test.js';\nexport type I = J;\n");
    writeFileSync(path.join(dir, 'i.test.ts'), "import type { I } from './i.js';\nexport type J = I;\n");
    const results = await eslint.lintFiles(['i.ts', 'i.test.ts'].map((f) => path.join(dir, f)));
    expect(results.map((r) => r.messages)).toEqual([[], []]);
  });
});
