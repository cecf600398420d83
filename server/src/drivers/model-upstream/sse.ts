/**
 * Server-sent events, read incrementally: each event's data is handed on as soon as its closing
 * blank line arrives, never after the whole body.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const parts = body[Symbol.asyncIterator]();
  for (;;) {
    const { done, value } = await parts.next();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf('\n', start); end >= 0; end = buffer.indexOf('\n', start)) {
      let line = buffer.slice(start, end);
      start = end + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length > 0) {
          yield data.join('\n');
          data = [];
        }
      } else if (line.startsWith('data:')) {
        data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
      }
      // Comments (":") and other fields (event, id, retry) carry nothing the OpenAI format uses.
    }
    buffer = buffer.slice(start);
    if (done) {
      if (buffer.startsWith('data:')) data.push(buffer.charCodeAt(5) === 32 ? buffer.slice(6) : buffer.slice(5));
      if (data.length > 0) yield data.join('\n');
      return;
    }
  }
}
