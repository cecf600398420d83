import { useEffect, useRef, useState } from 'react';
import { App, Button, Empty, Flex, Input, Modal, Result, Select, Skeleton, Space, Tag, Tooltip, theme } from 'antd';
import { CopyOutlined, ExpandOutlined, PoweroffOutlined, ReloadOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import RFB from '@novnc/novnc';
import { PAGE, SOCKET_RESTART, type Instance } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { desktopUrl, detailPathOf, instanceQueries } from '../../instances';
import { LoadError } from '../../../components/LoadError';

type Phase = 'connecting' | 'connected' | 'reconnecting' | 'disconnected';
const PHASES: Record<Phase, { color: string; text: string }> = {
  connecting: { color: 'processing', text: '连接中' },
  connected: { color: 'success', text: '已连接' },
  reconnecting: { color: 'warning', text: '重新连接中' },
  disconnected: { color: 'default', text: '已断开' },
};
/** A console that is stopping closes the desktop with 1012: connected again this many times in a row, after these waits. */
const RESTART_RETRY_MS = [500, 1500, 4000];
/** noVNC's JPEG quality levels (0–9) by what users pick. */
const QUALITY = [
  { value: 2, label: '流畅' },
  { value: 6, label: '均衡' },
  { value: 9, label: '高清' },
];

/**
 * The desktop of a 云桌面 / 云游戏 / 跨境电商 machine in the browser (noVNC over the console's
 * WebSocket). `bare`: the desktop alone in the whole window (/free/:id), without the toolbar.
 */
export function DesktopView({ instanceId, bare = false }: { instanceId: string; bare?: boolean }) {
  const instance = useQuery(instanceQueries.one(instanceId));
  if (instance.isPending) return <Skeleton active paragraph={{ rows: 8 }} style={{ padding: 24 }} />;
  if (instance.isError) {
    if (isApiError(instance.error) && (instance.error.status === 404 || instance.error.status === 400)) {
      return <Result status="404" title="实例不存在或已释放" subTitle="请回到控制台确认实例 ID。" extra={<Link to={PAGE.desktop}>返回云桌面列表</Link>} />;
    }
    return <LoadError error={instance.error} onRetry={() => void instance.refetch()} />;
  }
  const i = instance.data;
  if (!i.access?.desktop) {
    return <Result status="info" title="该实例没有远程桌面" subTitle="远程桌面用于云桌面、云游戏和跨境电商实例；其他实例请使用终端、SSH 或 JupyterLab。" />;
  }
  if (i.status !== 'Running') {
    return (
      <Empty description={`实例「${i.name}」未运行：开机后即可连接远程桌面`} style={{ padding: 48 }}>
        <Link to={detailPathOf(i)}>
          <Button type="primary" icon={<PoweroffOutlined />}>
            去开机
          </Button>
        </Link>
      </Empty>
    );
  }
  return <Desktop instance={i} bare={bare} />;
}

function Desktop({ instance: i, bare }: { instance: Instance; bare: boolean }) {
  const { token } = theme.useToken();
  const { message } = App.useApp();
  const screen = useRef<HTMLDivElement>(null);
  const rfb = useRef<RFB | null>(null);
  const [phase, setPhase] = useState<Phase>('connecting');
  const [why, setWhy] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [quality, setQuality] = useState(6);
  const [remoteClipboard, setRemoteClipboard] = useState('');
  const [clipboardOpen, setClipboardOpen] = useState(false);
  const [draft, setDraft] = useState('');
  /** Reconnects in a row after 1012 closes (a replica going away); back to 0 once connected. */
  const restarts = useRef(0);

  useEffect(() => {
    setPhase(restarts.current ? 'reconnecting' : 'connecting');
    if (!restarts.current) setWhy(null);
    // Our own socket, so its close code is seen (noVNC's disconnect event only says clean or not).
    const socket = new WebSocket(desktopUrl(i.id));
    let restarting = false;
    socket.addEventListener('close', (e) => (restarting = e.code === SOCKET_RESTART.code));
    let retry: ReturnType<typeof setTimeout> | undefined;
    const r = new RFB(screen.current!, socket, { shared: true });
    r.scaleViewport = true;
    r.background = '#1e1b2e';
    // Events of a connection that "重新连接" replaced are not this one's.
    r.addEventListener('connect', () => {
      if (rfb.current !== r) return;
      restarts.current = 0;
      setPhase('connected');
      setWhy(null);
    });
    r.addEventListener('disconnect', (e) => {
      if (rfb.current !== r) return;
      const wait = RESTART_RETRY_MS[restarts.current];
      if (restarting && wait !== undefined) {
        // The console is restarting: the next connection goes to a replica that stays.
        restarts.current += 1;
        setPhase('reconnecting');
        setWhy('控制台服务正在重启，正在重新连接…');
        retry = setTimeout(() => setAttempt((n) => n + 1), wait);
        return;
      }
      restarts.current = 0;
      setPhase('disconnected');
      setWhy((e as CustomEvent<{ clean: boolean }>).detail.clean ? '远程桌面已断开' : '连接中断：实例可能已关机，或网络不通。请点击「重新连接」');
    });
    r.addEventListener('clipboard', (e) => setRemoteClipboard((e as CustomEvent<{ text: string }>).detail.text));
    rfb.current = r;
    return () => {
      clearTimeout(retry);
      r.disconnect();
    };
  }, [i.id, attempt]);

  useEffect(() => {
    if (rfb.current) rfb.current.qualityLevel = quality;
  }, [quality, phase]);

  const fullscreen = () => void screen.current?.requestFullscreen().catch(() => message.error('浏览器不允许全屏'));
  const sendClipboard = () => {
    rfb.current?.clipboardPasteFrom(draft);
    void message.success('已发送到远程桌面的剪贴板，在远程桌面中粘贴即可');
    setClipboardOpen(false);
  };

  const desktop = (
    <div
      ref={screen}
      data-testid="remote-desktop"
      style={{
        width: '100%',
        height: bare ? '100vh' : 'calc(100vh - 190px)',
        minHeight: 360,
        background: '#1e1b2e',
        borderRadius: bare ? 0 : token.borderRadius,
        overflow: 'hidden',
      }}
    />
  );
  if (bare) return desktop;
  const tag = PHASES[phase];
  return (
    <Flex vertical gap={12} style={{ padding: 16 }}>
      <Flex justify="space-between" align="center" wrap gap={8}>
        <Space>
          <Tag color={tag.color} data-testid="desktop-status">
            {tag.text}
          </Tag>
          <span style={{ color: token.colorTextSecondary }}>
            {i.name}
            {why ? ` · ${why}` : ''}
          </span>
        </Space>
        <Space wrap>
          <Select size="small" value={quality} onChange={setQuality} options={QUALITY} style={{ width: 90 }} aria-label="画质" />
          <Tooltip title="在远程桌面中按下 Ctrl+Alt+Del">
            <Button size="small" disabled={phase !== 'connected'} onClick={() => rfb.current?.sendCtrlAltDel()}>
              Ctrl+Alt+Del
            </Button>
          </Tooltip>
          <Button
            size="small"
            icon={<CopyOutlined />}
            onClick={() => {
              setDraft('');
              setClipboardOpen(true);
            }}
          >
            剪贴板
          </Button>
          <Button size="small" icon={<ExpandOutlined />} onClick={fullscreen}>
            全屏
          </Button>
          <Button
            size="small"
            icon={<ReloadOutlined />}
            disabled={phase === 'connecting'}
            onClick={() => {
              restarts.current = 0;
              setAttempt((n) => n + 1);
            }}
          >
            重新连接
          </Button>
        </Space>
      </Flex>
      {desktop}
      <Modal title="剪贴板" open={clipboardOpen} onCancel={() => setClipboardOpen(false)} onOk={sendClipboard} okText="发送到远程桌面" cancelText="关闭">
        <Flex vertical gap={12}>
          <div>
            <div style={{ marginBottom: 4, color: token.colorTextSecondary }}>远程桌面中最近复制的文字</div>
            <Input.TextArea value={remoteClipboard} readOnly rows={3} placeholder="在远程桌面中复制文字后会显示在这里" />
          </div>
          <div>
            <div style={{ marginBottom: 4, color: token.colorTextSecondary }}>要发送到远程桌面的文字</div>
            <Input.TextArea value={draft} onChange={(e) => setDraft(e.target.value)} rows={3} placeholder="粘贴或输入文字，发送后在远程桌面中粘贴" />
          </div>
        </Flex>
      </Modal>
    </Flex>
  );
}
