/**
 * 「查看代码」: the current conversation and settings as a call anyone can run against the gateway,
 * with curl and the official openai packages for Python and Node. The key is never the console's:
 * the snippets read it from the API_KEY environment variable.
 */
import { chatBody, type ChatRequest } from '../api/modelPlayground';

export type SnippetLanguage = 'curl' | 'python' | 'node';

export const SNIPPET_LANGUAGES: { key: SnippetLanguage; label: string }[] = [
  { key: 'curl', label: 'cURL' },
  { key: 'python', label: 'Python' },
  { key: 'node', label: 'Node.js' },
];

/** Indents every line but the first (for a JSON value placed after `key=`). */
const indentTail = (text: string, spaces: number) => text.replace(/\n/g, `\n${' '.repeat(spaces)}`);

/** A string as a single-quoted shell word: `'` closes, gets escaped, reopens. */
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

export function snippet(language: SnippetLanguage, req: ChatRequest, baseUrl: string): string {
  const messages = JSON.stringify(req.messages, null, 2);
  switch (language) {
    case 'curl':
      return [
        '# 先在「API KEY」页面创建密钥：export API_KEY=sk-...',
        `curl ${baseUrl}/chat/completions \\`,
        '  -H "Content-Type: application/json" \\',
        '  -H "Authorization: Bearer $API_KEY" \\',
        `  -d ${indentTail(shellQuote(JSON.stringify(chatBody(req), null, 2)), 2)}`,
      ].join('\n');
    case 'python':
      return [
        '# pip install openai',
        '# 先在「API KEY」页面创建密钥：export API_KEY=sk-...',
        'import os',
        'from openai import OpenAI',
        '',
        'client = OpenAI(',
        '    api_key=os.environ["API_KEY"],',
        `    base_url=${JSON.stringify(baseUrl)},`,
        ')',
        '',
        'stream = client.chat.completions.create(',
        `    model=${JSON.stringify(req.model)},`,
        `    messages=${indentTail(messages, 4)},`,
        `    temperature=${req.temperature},`,
        `    max_tokens=${req.maxTokens},`,
        '    stream=True,',
        '    stream_options={"include_usage": True},',
        ')',
        'for chunk in stream:',
        '    if chunk.choices and chunk.choices[0].delta.content:',
        '        print(chunk.choices[0].delta.content, end="", flush=True)',
        '    if chunk.usage:',
        '        print(f"\\n输入 {chunk.usage.prompt_tokens} Tokens，输出 {chunk.usage.completion_tokens} Tokens")',
      ].join('\n');
    case 'node':
      return [
        '// npm install openai',
        '// 先在「API KEY」页面创建密钥：export API_KEY=sk-...',
        "import OpenAI from 'openai';",
        '',
        'const client = new OpenAI({',
        '  apiKey: process.env.API_KEY,',
        `  baseURL: ${JSON.stringify(baseUrl)},`,
        '});',
        '',
        'const stream = await client.chat.completions.create({',
        `  model: ${JSON.stringify(req.model)},`,
        `  messages: ${indentTail(messages, 2)},`,
        `  temperature: ${req.temperature},`,
        `  max_tokens: ${req.maxTokens},`,
        '  stream: true,',
        '  stream_options: { include_usage: true },',
        '});',
        'for await (const chunk of stream) {',
        "  process.stdout.write(chunk.choices[0]?.delta?.content ?? '');",
        '  if (chunk.usage) console.log(`\\n输入 ${chunk.usage.prompt_tokens} Tokens，输出 ${chunk.usage.completion_tokens} Tokens`);',
        '}',
      ].join('\n');
  }
}
