/**
 * The embedded model: a token-level trigram model over `o200k_base` token ids, with backoff to
 * bigrams and unigrams, trained on the Chinese and English texts in `corpus/` the first time it is
 * used (about a tenth of a second) and kept in memory.
 *
 * A chat answer opens with the corpus sentence that shares the most with the question (its rarest
 * words count most; in the question's language), up to the word it shares, then continues token by
 * token from the two previous tokens; a completion continues the prompt's last two tokens. Sampling
 * follows the seed (the same seed, prompt and settings give the same tokens), the temperature and
 * top_p.
 *
 * Every token produced is kept canonical: the answer's text re-encodes to exactly the tokens that
 * were produced, so `completion_tokens` equals what any o200k tokenizer counts in the text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { decode, encode } from './tokens.js';

/** o200k ids are below 2^18, so a pair of ids fits one number exactly. */
const PAIR = 2 ** 18;
const HAN = /\p{Script=Han}/u;
const WORDY = /[\p{L}\p{N}]/u;
/** Words that ask rather than say what the question is about; never the anchor of an answer. */
const QUESTION_WORDS = new Set(
  (
    '什么 怎么 怎样 如何 为什么 为何 哪些 哪个 哪里 多少 是 的 了 吗 呢 吧 啊 我 你 您 他 她 它 我们 你们 请 请问 一下 告诉 介绍 讲讲 说说 解释 可以 能 能否 有 没有 和 与 在 这 那 这个 那个 一个 一些 ' +
    'what how why which who whom when where is are was were be been the a an of to in on for and or but do does did can could would should will ' +
    "tell me about please explain you your i my it its this that these those with from as by at give show describe there what's how's"
  ).split(' '),
);

interface Successors {
  /** Following tokens, most frequent first (ties: lower id first), and how often each followed. */
  tokens: number[];
  counts: number[];
}

export interface GenerateOptions {
  /** `chat`: answer the context (start at a matching sentence); `completion`: continue it. */
  mode: 'chat' | 'completion';
  /** The tokens that condition the output: the last user message (chat) or the prompt (completion). */
  context: readonly number[];
  /** Any integer; mixed with the context, so different prompts differ under one seed. */
  seed: number;
  /** 0 always takes the most frequent continuation; 1 samples by frequency; 2 flattens. */
  temperature: number;
  topP: number;
  /** A paragraph break ends the answer only after this many tokens. */
  minTokens?: number;
}

export interface GeneratedToken {
  token: number;
  text: string;
}

/** Why generation ended by itself: the answer reached a paragraph break or nothing could follow. */
export type NaturalEnd = 'stop';

export class NgramModel {
  private readonly seq: number[] = [];
  private readonly unigram: Successors;
  private readonly bigram = new Map<number, Successors>();
  private readonly trigram = new Map<number, Successors>();
  private readonly counts = new Map<number, number>();
  private readonly texts = new Map<number, string>();
  /** Each sentence of the corpus: where it starts, whether it is Chinese, and the sentences each token occurs in. */
  private readonly sentences: { start: number; han: boolean }[] = [];
  private readonly sentencesOf = new Map<number, number[]>();
  readonly tokenCount: number;

  constructor(documents: readonly string[]) {
    const bi = new Map<number, Map<number, number>>();
    const tri = new Map<number, Map<number, number>>();
    const bump = (table: Map<number, Map<number, number>>, key: number, next: number) => {
      let row = table.get(key);
      if (!row) table.set(key, (row = new Map()));
      row.set(next, (row.get(next) ?? 0) + 1);
    };
    for (const doc of documents) {
      const tokens = encode(doc);
      if (tokens.length > 0 && this.seq.length > 0) this.seq.push(-1); // documents never run into each other
      for (let i = 0; i < tokens.length; i++) {
        const t = tokens[i]!;
        this.seq.push(t);
        this.counts.set(t, (this.counts.get(t) ?? 0) + 1);
        if (i >= 1) bump(bi, tokens[i - 1]!, t);
        if (i >= 2) bump(tri, tokens[i - 2]! * PAIR + tokens[i - 1]!, t);
      }
    }
    this.tokenCount = this.counts.size === 0 ? 0 : this.seq.filter((t) => t >= 0).length;
    for (const t of this.counts.keys()) this.texts.set(t, decode([t]));
    for (const [key, row] of bi) this.bigram.set(key, successors(row));
    for (const [key, row] of tri) this.trigram.set(key, successors(row));
    // Unigram backoff only offers tokens that can start anywhere: whole characters, no paragraph break.
    const starts = new Map([...this.counts].filter(([t]) => this.isClean(t) && !this.isBreak(t)));
    this.unigram = successors(starts);
    for (let i = 0; i < this.seq.length; i++) {
      const t = this.seq[i]!;
      if (t < 0 || !WORDY.test(this.textOf(t))) continue;
      const prev = this.seq[i - 1];
      if (prev !== undefined && prev >= 0 && !this.endsSentence(prev)) continue;
      const index = this.sentences.length;
      let text = '';
      for (let j = i; j < this.seq.length && this.seq[j]! >= 0; j++) {
        const u = this.seq[j]!;
        text += this.textOf(u);
        const list = this.sentencesOf.get(u);
        if (!list) this.sentencesOf.set(u, [index]);
        else if (list[list.length - 1] !== index) list.push(index);
        if (this.endsSentence(u)) break;
      }
      this.sentences.push({ start: i, han: HAN.test(text) });
    }
  }

  /** Distinct tokens seen in training. */
  get vocabularySize(): number {
    return this.counts.size;
  }

  /** How often the token occurs in the corpus (0 when never). */
  frequency(token: number): number {
    return this.counts.get(token) ?? 0;
  }

  textOf(token: number): string {
    let text = this.texts.get(token);
    if (text === undefined) this.texts.set(token, (text = decode([token])));
    return text;
  }

  /**
   * Produces tokens one at a time; the caller stops pulling at max_tokens or a stop sequence. Returns
   * `stop` when the answer ends by itself (a paragraph break after `minTokens`, or no continuation).
   */
  *generate(options: GenerateOptions): Generator<GeneratedToken, NaturalEnd, void> {
    const rng = mulberry32(hashSeed(options.seed, options.context));
    const temperature = options.temperature;
    const topP = options.topP;
    const minTokens = options.minTokens ?? (options.mode === 'chat' ? 12 : 1);
    const out = new CanonicalText();
    const ctx = options.context;
    const seen = new Set<string>();
    let c1 = -1;
    let c2 = -1;

    const last = ctx[ctx.length - 1];
    if (options.mode === 'completion' && last !== undefined && this.bigram.has(last)) {
      c1 = ctx[ctx.length - 2] ?? -1;
      c2 = last;
    } else {
      // The answer opens with the matching sentence up to its word the question asked about.
      const start = this.pickStart(ctx, temperature <= 0 ? () => 0 : rng); // temperature 0: the best sentence, whatever the seed
      if (start) {
        let lastForced = start.from - 1;
        for (let p = start.from; p <= start.through; p++) {
          const original = this.seq[p]!;
          let emit = [original];
          if (p === start.from && options.mode === 'chat') {
            // Without the space that separated it from the sentence before.
            const text = this.textOf(original);
            if (/^\s/.test(text)) emit = text.trim() ? encode(text.trimStart()) : [];
          }
          if (!emit.every((t) => out.tryAppend(t, this.textOf(t)))) break;
          for (const t of emit) yield { token: t, text: this.textOf(t) };
          lastForced = p;
        }
        c1 = this.seq[lastForced - 1] ?? -1;
        c2 = this.seq[lastForced] ?? -1;
      }
    }

    for (;;) {
      const next = this.next(c1, c2, out, rng, temperature, topP, minTokens, options.mode === 'chat', seen);
      if (next === undefined) return 'stop';
      if (next.breakToken !== undefined) {
        // A paragraph break ends the answer; the text before it in the same token (e.g. "。") is kept.
        const before = this.textOf(next.breakToken).split('\n\n')[0]!;
        if (before.length > 0) {
          for (const t of encode(before)) {
            if (!out.tryAppend(t, this.textOf(t))) break;
            yield { token: t, text: this.textOf(t) };
          }
        }
        return 'stop';
      }
      yield { token: next.token, text: this.textOf(next.token) };
      c1 = c2;
      c2 = next.token;
    }
  }

  private next(
    c1: number,
    c2: number,
    out: CanonicalText,
    rng: () => number,
    temperature: number,
    topP: number,
    minTokens: number,
    noLeadingSpace: boolean,
    seen: Set<string>,
  ): { token: number; breakToken?: undefined } | { token?: undefined; breakToken: number } | undefined {
    const levels: (Successors | undefined)[] = [
      c1 >= 0 && c2 >= 0 ? this.trigram.get(c1 * PAIR + c2) : undefined,
      c2 >= 0 ? this.bigram.get(c2) : undefined,
      this.unigram,
    ];
    for (const level of levels) {
      if (!level) continue;
      const rejected = new Set<number>();
      for (let tries = 0; tries < 8; tries++) {
        const t = sample(level, rng, temperature, topP, rejected);
        if (t === undefined) break;
        rejected.add(t);
        if (this.isBreak(t)) {
          if (out.length >= minTokens) return { breakToken: t };
          continue;
        }
        if (!this.isClean(t)) continue;
        const text = this.textOf(t);
        if (out.length === 0 && noLeadingSpace && /^\s/.test(text)) continue;
        // No four tokens twice: a trigram model otherwise loops through the same sentences.
        const gram = `${out.last(2)},${c1},${c2},${t}`;
        if (seen.has(gram)) continue;
        if (out.tryAppend(t, text)) {
          seen.add(gram);
          return { token: t };
        }
      }
    }
    return undefined;
  }

  /**
   * Where a chat answer (or a completion of an unknown prompt) starts: the corpus sentence sharing the
   * most with the context (each shared word weighted by how rare it is), in the context's language;
   * the seed picks among equally good ones.
   */
  private pickStart(context: readonly number[], rng: () => number): { from: number; through: number } | undefined {
    const wantHan = HAN.test(decode(context as number[]));
    const scores = new Map<number, number>();
    const weights = new Map<number, number>();
    for (const t of new Set(context)) {
      const n = this.counts.get(t);
      if (!n) continue;
      const text = this.textOf(t);
      if (!WORDY.test(text) || QUESTION_WORDS.has(text.trim().toLowerCase())) continue;
      const weight = Math.log(this.tokenCount / n);
      weights.set(t, weight);
      for (const index of this.sentencesOf.get(t) ?? []) scores.set(index, (scores.get(index) ?? 0) + weight);
    }
    const pickFrom = (indexes: number[]) => this.sentences[indexes[Math.floor(rng() * indexes.length)]!]!;
    let chosen: { start: number } | undefined;
    for (const language of [true, false]) {
      let best = 0;
      let pool: number[] = [];
      for (const [index, score] of scores) {
        if (language && this.sentences[index]!.han !== wantHan) continue;
        if (score > best + 1e-9) {
          best = score;
          pool = [index];
        } else if (Math.abs(score - best) <= 1e-9) pool.push(index);
      }
      if (pool.length > 0) {
        chosen = pickFrom(pool.sort((a, b) => a - b));
        break;
      }
    }
    if (!chosen) {
      const sameLanguage = this.sentences.flatMap((s, i) => (s.han === wantHan ? [i] : []));
      if (sameLanguage.length > 0) chosen = pickFrom(sameLanguage);
      else if (this.sentences.length > 0) chosen = pickFrom(this.sentences.map((_, i) => i));
    }
    if (!chosen) return undefined;
    // Through the sentence's rarest word of the question (at most 40 tokens in); just its first token when none.
    let through = chosen.start;
    let best = 0;
    for (let p = chosen.start; p < chosen.start + 40 && (this.seq[p] ?? -1) >= 0; p++) {
      const weight = weights.get(this.seq[p]!) ?? 0;
      if (weight > best) {
        best = weight;
        through = p;
      }
      if (this.endsSentence(this.seq[p]!)) break;
    }
    return { from: chosen.start, through };
  }

  private endsSentence(token: number): boolean {
    const text = this.textOf(token);
    return text.includes('\n') || /[。！？!?.：:]\s*$/.test(text);
  }

  private isBreak(token: number): boolean {
    return this.textOf(token).includes('\n\n');
  }

  /** Whole characters only: a token holding part of a character's bytes decodes to U+FFFD. */
  private isClean(token: number): boolean {
    return !this.textOf(token).includes('\uFFFD');
  }
}

/**
 * The answer so far, kept canonical: a token is accepted only when the text still encodes to exactly
 * the tokens produced. Only the last pieces of o200k's pre-tokenisation can change when text is
 * appended, so only they are re-encoded.
 */
class CanonicalText {
  private readonly tokens: number[] = [];
  private readonly texts: string[] = [];
  /** Tokens before this index form pieces that appending can no longer change. */
  private stable = 0;
  private tail = '';

  get length(): number {
    return this.tokens.length;
  }

  /** The token n places from the end (1 = the last), -1 when there is none. */
  last(n: number): number {
    return this.tokens[this.tokens.length - n] ?? -1;
  }

  tryAppend(token: number, text: string): boolean {
    const candidate = this.tail + text;
    const encoded = encode(candidate);
    const expected = this.tokens.length - this.stable + 1;
    if (encoded.length !== expected || encoded[expected - 1] !== token) return false;
    for (let i = 0; i < expected - 1; i++) if (encoded[i] !== this.tokens[this.stable + i]) return false;
    this.tokens.push(token);
    this.texts.push(text);
    this.tail = candidate;
    this.settle();
    return true;
  }

  /** Moves the stable mark to the start of the third-last piece (always a token boundary in canonical text). */
  private settle() {
    const starts: number[] = [];
    for (const match of this.tail.matchAll(O200K_TOKEN_SPLIT_REGEX)) starts.push(match.index);
    if (starts.length <= 3) return;
    const keepFrom = starts[starts.length - 3]!;
    let chars = 0;
    let i = this.stable;
    while (i < this.tokens.length && chars + this.texts[i]!.length <= keepFrom) chars += this.texts[i++]!.length;
    if (chars !== keepFrom) return; // not on a token boundary: keep re-encoding the longer tail
    this.stable = i;
    this.tail = this.tail.slice(chars);
  }
}

function successors(row: Map<number, number>): Successors {
  const entries = [...row].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  return { tokens: entries.map((e) => e[0]), counts: entries.map((e) => e[1]) };
}

/** Temperature reshapes the frequencies (count^(1/T), taken relative to the largest so it never overflows); top_p keeps the likeliest share. */
function sample(level: Successors, rng: () => number, temperature: number, topP: number, rejected: ReadonlySet<number>): number | undefined {
  const { tokens, counts } = level;
  if (temperature <= 0) {
    for (const t of tokens) if (!rejected.has(t)) return t;
    return undefined;
  }
  const inverse = 1 / temperature;
  const top = counts[0]!;
  const weights: number[] = [];
  const ids: number[] = [];
  let total = 0;
  for (let i = 0; i < tokens.length; i++) {
    if (rejected.has(tokens[i]!)) continue;
    const w = (counts[i]! / top) ** inverse;
    if (w <= 0) break; // sorted: the rest underflow too
    weights.push(w);
    ids.push(tokens[i]!);
    total += w;
  }
  if (ids.length === 0) return undefined;
  let keep = ids.length;
  if (topP < 1) {
    const cut = Math.max(topP, 1e-9) * total;
    let sum = 0;
    for (let i = 0; i < ids.length; i++) {
      sum += weights[i]!;
      if (sum >= cut) {
        keep = i + 1;
        total = sum;
        break;
      }
    }
  }
  let r = rng() * total;
  for (let i = 0; i < keep; i++) {
    r -= weights[i]!;
    if (r < 0) return ids[i];
  }
  return ids[keep - 1];
}

function mulberry32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over the seed and the context tokens. */
function hashSeed(seed: number, context: readonly number[]): number {
  let h = 0x811c9dc5;
  const mix = (n: number) => {
    h ^= n & 0xffff;
    h = Math.imul(h, 0x01000193);
    h ^= (n >>> 16) & 0xffff;
    h = Math.imul(h, 0x01000193);
  };
  mix(Math.trunc(seed) | 0);
  mix(Math.trunc(seed / 2 ** 32) | 0);
  for (const t of context) mix(t);
  return h >>> 0;
}

let trained: NgramModel | undefined;

/** The corpus files, in name order. */
export function corpusTexts(): string[] {
  const dir = new URL('./corpus/', import.meta.url);
  return readdirSync(dir)
    .filter((name) => name.endsWith('.txt'))
    .sort()
    .map((name) => readFileSync(new URL(name, dir), 'utf8'));
}

/** The model trained on `corpus/*.txt`, trained once per process on first use. */
export function corpusModel(): NgramModel {
  return (trained ??= new NgramModel(corpusTexts()));
}
