/**
 * ESLint rule `console/no-cycle`: no import cycles among the server's files, type-only imports INCLUDED.
 *
 * `import-x/no-cycle` skips `import type` (it asks whether the files can load, and a type import does
 * not run). This rule asks whether the modules are layered: a routes file that takes the whole app by
 * `import type { AppContext }` from the file that imports every module ties them all into one knot,
 * even though nothing fails at load time.
 *
 * The relative-import graph of the source tree is built once per lint run (and again when a linted
 * file is new or changed on disk since), its strongly connected components found with Tarjan's
 * algorithm, and each import of a file whose target lies in the file's own component is reported
 * with one cycle through it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SOURCE_FILE = /\.tsx?$/;
const TEST_FILE = /\.test\.tsx?$/;

/** The source files under `dir`, tests left out (tests may import anything, nothing imports them). */
function sourceFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(full));
    else if (SOURCE_FILE.test(entry.name) && !TEST_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(full);
  }
  return found;
}

/** The file a relative specifier names (`./x.js` written in TypeScript means `./x.ts`), or null outside `known`. */
export function resolveSpecifier(fromFile, specifier, known) {
  if (!specifier.startsWith('.')) return null;
  const base = path.resolve(path.dirname(fromFile), specifier);
  const stem = base.replace(/\.jsx?$/, '');
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, path.join(base, 'index.ts'), path.join(base, 'index.tsx')]) {
    if (known.has(candidate)) return candidate;
  }
  return null;
}

/** Every specifier a file imports or re-exports from: static, type-only and dynamic alike. */
function specifiersOf(text) {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** Tarjan's strongly connected components: a map from each file to its component's index. */
function components(edges) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const componentOf = new Map();
  let counter = 0;
  let componentCount = 0;
  // Iterative: a deep chain of imports must not overflow the call stack.
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const work = [[start, 0]];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const frame = work[work.length - 1];
      const [node, next] = frame;
      const targets = edges.get(node);
      if (next < targets.length) {
        frame[1]++;
        const target = targets[next];
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push([target, 0]);
        } else if (onStack.has(target)) {
          low.set(node, Math.min(low.get(node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          componentOf.set(member, componentCount);
        } while (member !== node);
        componentCount++;
      }
    }
  }
  return componentOf;
}

/** The import graph of the files under `dir`: edges, components, and when it was read. */
export function importGraph(dir) {
  const files = sourceFiles(dir);
  const known = new Set(files);
  const edges = new Map();
  for (const file of files) {
    const targets = specifiersOf(readFileSync(file, 'utf8'))
      .map((s) => resolveSpecifier(file, s, known))
      .filter((t) => t !== null);
    edges.set(file, [...new Set(targets)]);
  }
  return { dir, known, edges, componentOf: components(edges), builtAt: Date.now() };
}

/** The shortest path of imports from `from` to `to` inside one component (breadth first). */
export function pathWithin(graph, from, to) {
  const component = graph.componentOf.get(from);
  const cameFrom = new Map([[from, null]]);
  const queue = [from];
  while (queue.length) {
    const node = queue.shift();
    if (node === to) break;
    for (const next of graph.edges.get(node) ?? []) {
      if (cameFrom.has(next) || graph.componentOf.get(next) !== component) continue;
      cameFrom.set(next, node);
      queue.push(next);
    }
  }
  const steps = [];
  for (let node = to; node !== null && node !== undefined; node = cameFrom.get(node)) steps.unshift(node);
  return steps;
}

const graphs = new Map();

/** The graph of `dir`, read again only when `file` is new to it or changed on disk since it was read. */
function graphFor(dir, file) {
  const cached = graphs.get(dir);
  if (cached && cached.known.has(file) && statSync(file).mtimeMs <= cached.builtAt) return cached;
  const graph = importGraph(dir);
  graphs.set(dir, graph);
  return graph;
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'import cycles among the server files, type-only imports included' },
    schema: [
      {
        type: 'object',
        properties: { root: { type: 'string' }, dir: { type: 'string' } },
        required: ['root'],
        additionalProperties: false,
      },
    ],
  },
  create(context) {
    const { root, dir = 'server/src' } = context.options[0];
    const sourceDir = path.join(root, dir);
    const file = context.filename;
    // A file linted from text only (none on disk) has no place in the graph.
    if (!file.startsWith(sourceDir + path.sep) || TEST_FILE.test(file) || !existsSync(file)) return {};
    const graph = graphFor(sourceDir, file);
    const name = (f) => path.relative(sourceDir, f).split(path.sep).join('/');
    const check = (node) => {
      if (!node.source || typeof node.source.value !== 'string') return;
      const target = resolveSpecifier(file, node.source.value, graph.known);
      if (!target) return;
      const component = graph.componentOf.get(file);
      if (component === undefined || graph.componentOf.get(target) !== component) return;
      const cycle = [file, ...pathWithin(graph, target, file)];
      context.report({ node: node.source, message: `循环依赖：${cycle.map(name).join(' → ')}` });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default rule;
