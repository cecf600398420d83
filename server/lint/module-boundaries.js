/**
 * ESLint rule `console/module-boundaries`: the layout of DESIGN.md as a check.
 *
 * - A domain module (`server/src/modules/<name>/`) owns its tables (`schema.ts`): no other code
 *   imports them; it calls the owner's public entry instead. Only `server/src/db/` assembles the
 *   whole schema (`db/schema.ts`) for the database client and drizzle-kit.
 * - A module's public entry is its `index.ts`; every other file of it is internal to it.
 * - The packages depend one way: web and server on contract; nothing on web or server.
 *
 * Tests (`*.test.ts`, `server/test/`) and the benches arrange and inspect any table directly: they
 * check a module from outside, they are not part of one.
 */
import path from 'node:path';
import noCycle from './no-cycle.js';

const MODULES = 'server/src/modules/';
const WHOLE_SCHEMA = 'server/src/db/schema.ts';

/** The repository-relative path of a file, with forward slashes. */
function repoPath(root, file) {
  return path.relative(root, file).split(path.sep).join('/');
}

function moduleOf(rel) {
  if (!rel.startsWith(MODULES)) return null;
  const [name, ...rest] = rel.slice(MODULES.length).split('/');
  return { name, file: rest.join('/') };
}

function isExempt(rel) {
  return /\.test\.tsx?$/.test(rel) || rel.startsWith('server/test/') || rel.startsWith('server/bench/') || rel.startsWith('server/lint/');
}

/** A module's `schema.ts`, or a driver's `<name>-schema.ts` (the outside world it stands in for keeps its own state). */
function isSchemaFile(rel) {
  return /(^|\/|-)schema\.ts$/.test(rel) && rel !== WHOLE_SCHEMA;
}

function packageOf(rel) {
  return rel.split('/')[0];
}

/** What a package may import from the others (by package name or by a relative path into them). */
const PACKAGE_DEPS = { contract: [], server: ['contract'], web: ['contract'], e2e: ['contract', 'server'] };
const PACKAGE_NAMES = { '@console/contract': 'contract', '@console/server': 'server', '@console/web': 'web', '@console/e2e': 'e2e' };

/** `./x.js` written in TypeScript sources means `./x.ts`. */
function resolveRelative(fromFile, source) {
  const target = path.resolve(path.dirname(fromFile), source);
  return target.replace(/\.js$/, '.ts').replace(/\.jsx$/, '.tsx');
}

function checkImport(root, fromRel, fromFile, source) {
  const named = PACKAGE_NAMES[source.split('/').slice(0, 2).join('/')];
  const fromPkg = packageOf(fromRel);
  if (named) {
    if (named !== fromPkg && PACKAGE_DEPS[fromPkg] && !PACKAGE_DEPS[fromPkg].includes(named))
      return `${fromPkg} 不能依赖 ${named}（包之间只能单向依赖 contract）`;
    return null;
  }
  if (!source.startsWith('.')) return null;
  const rel = repoPath(root, resolveRelative(fromFile, source));
  const toPkg = packageOf(rel);
  if (toPkg !== fromPkg && PACKAGE_DEPS[fromPkg] && !PACKAGE_DEPS[fromPkg].includes(toPkg)) return `${fromPkg} 不能引用 ${toPkg} 的文件`;
  if (isExempt(fromRel)) return null;
  if (fromRel.startsWith('server/src/db/')) return null;
  if (rel === WHOLE_SCHEMA) return '不要引用整个 db/schema：用表所属模块的服务（模块只引用自己的 schema.ts）';
  // A table may name another module's table in a foreign key: that declares a relation, it reads nothing.
  if (isSchemaFile(rel) && isSchemaFile(fromRel)) return null;
  const to = moduleOf(rel);
  if (!to) {
    if (isSchemaFile(rel) && path.posix.dirname(rel) !== path.posix.dirname(fromRel)) return `${rel} 的表属于 ${path.posix.dirname(rel)}：通过它的接口读写`;
    return null;
  }
  const from = moduleOf(fromRel);
  if (from?.name === to.name) return null;
  if (to.file === 'schema.ts') return `${to.name} 模块的表只能由 ${to.name} 自己读写：调用它的服务（../${to.name}/index.js）`;
  if (to.file !== 'index.ts') return `${to.name}/${to.file} 是 ${to.name} 模块的内部文件：从 ../${to.name}/index.js 引用`;
  return null;
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'module tables, public entries and package directions of DESIGN.md' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, required: ['root'], additionalProperties: false }],
  },
  create(context) {
    const root = context.options[0].root;
    const file = context.filename;
    const fromRel = repoPath(root, file);
    const check = (node) => {
      if (!node.source || typeof node.source.value !== 'string') return;
      const problem = checkImport(root, fromRel, file, node.source.value);
      if (problem) context.report({ node: node.source, message: problem });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { 'module-boundaries': rule, 'no-cycle': noCycle } };
