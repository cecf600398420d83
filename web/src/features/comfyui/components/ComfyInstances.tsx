/**
 * 我的 ComfyUI 实例 on /comfyui: the account's ComfyUI application instances, each running one
 * opened in its own ComfyUI (on the instance's own origin, through the console's door), in a new
 * window or, where that origin is on the console's own site, inside this page. When the console
 * session ends inside the frame, the page there posts `redirect_login` (spec §8): this page then
 * ends the session here too and goes to the login page.
 */
import { useEffect, useRef, useState } from 'react';
import { Button, Card, Flex, Space, Typography } from 'antd';
import { ExportOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { PAGE, type Instance } from '@console/contract';
import { InstanceStatusTags, instanceQueries } from '../../instances';
import { LoadError } from '../../../components/LoadError';
import { session } from '../../../session/store';

const FILTER = { applications: ['comfyui'] } as const;
const PAGE_SIZE = 20;
/** Two-label public suffixes common here: a site under them has three labels. */
const SECOND_LEVEL = ['com.cn', 'net.cn', 'org.cn', 'gov.cn', 'edu.cn', 'com.hk'];

/** The registrable domain of a host (null for IPs and localhost, which frame nothing of another host). */
export function siteOf(host: string): string | null {
  if (/^[\d.]+$/.test(host) || host.includes(':') || host === 'localhost' || host.endsWith('.localhost')) return null;
  const labels = host.split('.');
  const take = SECOND_LEVEL.includes(labels.slice(-2).join('.')) ? 3 : 2;
  return labels.length >= take ? labels.slice(-take).join('.') : null;
}

/** Whether a page of `url` can live in a frame of this page with its cookies: the same host, or the same site. */
export function framable(url: string, here: string): boolean {
  const [a, b] = [new URL(url), new URL(here)];
  if (a.protocol !== b.protocol) return false;
  if (a.host === b.host) return true;
  const site = siteOf(a.hostname);
  return site !== null && site === siteOf(b.hostname);
}

export function ComfyInstances() {
  const navigate = useNavigate();
  const list = useQuery(instanceQueries.list(FILTER, 1, PAGE_SIZE));
  const [framed, setFramed] = useState<Instance | null>(null);
  const frame = useRef<HTMLIFrameElement>(null);

  useEffect(() => {
    const onMessage = (e: MessageEvent) => {
      if (e.data !== 'redirect_login' || !frame.current || e.source !== frame.current.contentWindow) return;
      session.clear();
      void navigate(`${PAGE.login}?redirect=${encodeURIComponent(PAGE.comfyui)}`);
    };
    window.addEventListener('message', onMessage);
    return () => window.removeEventListener('message', onMessage);
  }, [navigate]);

  if (list.isError) return <LoadError error={list.error} onRetry={() => void list.refetch()} />;
  const items = list.data?.items ?? [];
  if (!list.isPending && !items.length) return null; // the notice above already offers one
  const open = framed && items.find((i) => i.id === framed.id && i.status === 'Running' && i.access?.appUrl);
  return (
    <Card title="我的 ComfyUI 实例" size="small" loading={list.isPending}>
      <Flex vertical gap={8}>
        {items.map((i) => {
          const url = i.status === 'Running' ? i.access?.appUrl : null;
          return (
            <Flex key={i.id} justify="space-between" align="center" gap={8} wrap aria-label={`ComfyUI 实例 ${i.name}`}>
              <Space size={8} wrap>
                <Typography.Text strong>{i.name}</Typography.Text>
                <Typography.Text type="secondary">{i.gpuName ? `${i.gpuName} × ${i.gpuCount}` : i.spec}</Typography.Text>
                <InstanceStatusTags instance={i} />
              </Space>
              {url ? (
                <Space size={8}>
                  {framable(url, window.location.href) && (
                    <Button size="small" type={open && open.id === i.id ? 'primary' : 'default'} onClick={() => setFramed(open && open.id === i.id ? null : i)}>
                      {open && open.id === i.id ? '收起编辑器' : '在页面中打开'}
                    </Button>
                  )}
                  <Button size="small" href={url} target="_blank" rel="noreferrer" icon={<ExportOutlined />}>
                    新窗口打开 ComfyUI
                  </Button>
                </Space>
              ) : (
                <Typography.Text type="secondary">
                  {i.status === 'Running' ? '应用启动中' : '开机后可打开'}，<Link to={`${PAGE.gpuGeneric}`}>去实例列表</Link>
                </Typography.Text>
              )}
            </Flex>
          );
        })}
        {open && (
          <iframe
            ref={frame}
            title={`ComfyUI 编辑器：${open.name}`}
            src={open.access!.appUrl!}
            style={{ width: '100%', height: 720, border: '1px solid var(--ant-color-border-secondary)', borderRadius: 8 }}
          />
        )}
      </Flex>
    </Card>
  );
}
