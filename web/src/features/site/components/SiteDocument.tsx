import type { ReactNode } from 'react';
import { Typography } from 'antd';

/**
 * A document of the operator's settings (用户协议, 隐私政策) as text with a small Markdown subset:
 * `# ` and `## ` (and `### `) headings, `- ` / `* ` list items, blank lines between paragraphs.
 * Everything else is text: it is rendered as React text nodes, so nothing in it can become markup.
 */
export function SiteDocument({ text }: { text: string }) {
  const blocks: ReactNode[] = [];
  let paragraph: string[] = [];
  let list: string[] = [];
  const flush = () => {
    if (paragraph.length)
      blocks.push(
        <Typography.Paragraph key={blocks.length} style={{ whiteSpace: 'pre-line' }}>
          {paragraph.join('\n')}
        </Typography.Paragraph>,
      );
    if (list.length)
      blocks.push(
        <ul key={blocks.length} style={{ paddingInlineStart: 24, marginBottom: 16 }}>
          {list.map((item, i) => (
            <li key={i}>{item}</li>
          ))}
        </ul>,
      );
    paragraph = [];
    list = [];
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd();
    const heading = /^(#{1,3})\s+(.*)$/.exec(line);
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = Math.min(heading[1]!.length + 2, 5) as 3 | 4 | 5;
      blocks.push(
        <Typography.Title key={blocks.length} level={level}>
          {heading[2]}
        </Typography.Title>,
      );
    } else if (item) {
      if (paragraph.length) flush();
      list.push(item[1]!);
    } else if (line.trim() === '') {
      flush();
    } else {
      if (list.length) flush();
      paragraph.push(line);
    }
  }
  flush();
  return <Typography style={{ maxWidth: 860 }}>{blocks}</Typography>;
}
