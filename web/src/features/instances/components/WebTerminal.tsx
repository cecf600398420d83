import { useEffect, useRef, useState } from 'react';
import { Alert, App, Button, Flex, Space, Tag, Tooltip, theme } from 'antd';
import { CopyOutlined, ReloadOutlined, SnippetsOutlined } from '@ant-design/icons';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import type { MessageInstance } from 'antd/es/message/interface';
import type { Instance } from '@console/contract';
import { TerminalConnection, type TerminalState } from '../api/terminal';

const PHASE_TAGS: Record<TerminalState['phase'], { color: string; text: string }> = {
  connecting: { color: 'processing', text: '连接中' },
  open: { color: 'success', text: '已连接' },
  reconnecting: { color: 'warning', text: '重新连接中' },
  closed: { color: 'default', text: '已断开' },
};

/**
 * The instance's web terminal: a login shell inside the machine (xterm.js over the console's
 * WebSocket). Copy with the toolbar or Ctrl+Shift+C, paste with Ctrl+V / Ctrl+Shift+V or the toolbar;
 * a dropped network connection resumes the same shell.
 */
export default function WebTerminal({ instance }: { instance: Instance }) {
  const { token } = theme.useToken();
  const { message } = App.useApp();
  const box = useRef<HTMLDivElement>(null);
  const term = useRef<Terminal | null>(null);
  const conn = useRef<TerminalConnection | null>(null);
  const [state, setState] = useState<TerminalState>({ phase: 'connecting' });

  useEffect(() => {
    const t = new Terminal({
      cursorBlink: true,
      fontSize: 14,
      // At xterm's default 1.0 the underscore falls below the row and is cut off (torch.__version__ read as "torch.  version  ").
      lineHeight: 1.2,
      fontFamily: 'Menlo, Consolas, "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace',
      theme: { background: '#1e1b2e', foreground: '#e8e6f0', cursor: token.colorPrimary, selectionBackground: '#5b4a99' },
      scrollback: 5000,
    });
    const fit = new FitAddon();
    t.loadAddon(fit);
    t.open(box.current!);
    fit.fit();
    const c = new TerminalConnection(
      instance.id,
      { cols: t.cols, rows: t.rows },
      {
        output: (data) => t.write(data),
        state: setState,
        notice: (text) => t.write(`\r\n\x1b[33m[${text}]\x1b[0m\r\n`),
      },
    );
    t.onData((data) => c.input(data));
    t.onResize(({ cols, rows }) => c.resize(cols, rows));
    t.attachCustomKeyEventHandler((e) => {
      // Ctrl+C stays the shell's interrupt; with Shift it copies, as in desktop terminals.
      if (e.type === 'keydown' && e.ctrlKey && e.shiftKey && e.code === 'KeyC') {
        void copySelection(t, message);
        return false;
      }
      return true;
    });
    const resized = new ResizeObserver(() => fit.fit());
    resized.observe(box.current!);
    term.current = t;
    conn.current = c;
    c.connect();
    t.focus();
    return () => {
      resized.disconnect();
      c.dispose();
      t.dispose();
    };
  }, [instance.id, token.colorPrimary, message]);

  async function paste() {
    try {
      term.current?.paste(await navigator.clipboard.readText());
      term.current?.focus();
    } catch {
      void message.error('浏览器不允许读取剪贴板，请在终端里按 Ctrl+V 粘贴');
    }
  }

  const tag = PHASE_TAGS[state.phase];
  return (
    <Flex vertical gap={12}>
      <Flex justify="space-between" align="center" wrap gap={8}>
        <Space>
          <Tag color={tag.color} data-testid="terminal-status">
            {tag.text}
          </Tag>
          <span style={{ color: token.colorTextSecondary, fontSize: 12 }}>{instance.name} · 以 root 登录；数据盘在 /root/autodl-tmp</span>
        </Space>
        <Space>
          <Tooltip title="复制选中的文字（Ctrl+Shift+C）">
            <Button size="small" icon={<CopyOutlined />} onClick={() => term.current && void copySelection(term.current, message)}>
              复制
            </Button>
          </Tooltip>
          <Tooltip title="粘贴剪贴板（Ctrl+V）">
            <Button size="small" icon={<SnippetsOutlined />} onClick={() => void paste()}>
              粘贴
            </Button>
          </Tooltip>
          <Button size="small" icon={<ReloadOutlined />} disabled={state.phase === 'connecting'} onClick={() => conn.current?.reconnect()}>
            重新连接
          </Button>
        </Space>
      </Flex>
      {state.message && <Alert type={state.phase === 'closed' ? 'warning' : 'info'} showIcon title={state.message} />}
      <div
        ref={box}
        data-testid="web-terminal"
        style={{ height: 460, padding: 8, background: '#1e1b2e', borderRadius: token.borderRadius, overflow: 'hidden' }}
      />
    </Flex>
  );
}

async function copySelection(t: Terminal, message: MessageInstance) {
  const text = t.getSelection();
  if (!text) return void message.info('请先用鼠标选中要复制的文字');
  try {
    await navigator.clipboard.writeText(text);
    void message.success('已复制');
  } catch {
    void message.error('浏览器不允许访问剪贴板，请用 Ctrl+Shift+C 复制');
  }
}
