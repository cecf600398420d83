import { lazy, Suspense, useState } from 'react';
import { Alert, Button, Card, Descriptions, Empty, Flex, Result, Skeleton, Space, Tabs, Tooltip, Typography } from 'antd';
import { ArrowLeftOutlined, EditOutlined, EyeInvisibleOutlined, EyeOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link, Navigate, useLocation, useParams } from 'react-router';
import { isPostpaid, BillingCycle, InstanceCategory, PAGE, type Instance, type InstanceCategory as Category } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { instanceQueries } from '../api/instances';
import { LoadError } from '../../../components/LoadError';
import { formatTime, orderDetailPath } from '../../../components/orderViews';
import { Price } from '../../../components/Price';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { PageFrame } from '../../../components/PageFrame';
import { InstanceActionBar } from '../components/InstanceActionButtons';
import {
  BUSY_POLL_MS,
  canDayToMonth,
  canRefund,
  canRenew,
  canTransferToLong,
  configSummary,
  detailPathOf,
  HOST_LOST_TAG,
  InstanceStatusTags,
  isBusy,
  listPathOf,
  scheduledStopText,
  SSH_KEYS_PAGE,
  taskBlocked,
} from '../components/instanceViews';
import { AppTokenPanel } from '../components/AppTokenPanel';
import { MonitorPanel } from '../components/MonitorPanel';
import { OperationLogTable } from '../components/OperationLogTable';
import { useInstanceActions } from '../hooks/useInstanceActions';

const TABS = ['overview', 'access', 'terminal', 'billing', 'disk', 'log'] as const;
/** xterm.js is loaded only when the terminal tab is opened. */
const WebTerminal = lazy(() => import('../components/WebTerminal'));
type Tab = (typeof TABS)[number];

const readTab = (p: URLSearchParams): Tab => ((TABS as readonly string[]).includes(p.get('tab') ?? '') ? (p.get('tab') as Tab) : 'overview');
const writeTab = (tab: Tab) => new URLSearchParams(tab === 'overview' ? {} : { tab });

const isCategory = (v: string): v is Category => (InstanceCategory.values as string[]).includes(v);

/** A missing instance, someone else's, a released one, or an id that is not an instance id: all "not found". */
const isNotFound = (e: unknown) => isApiError(e) && (e.status === 404 || e.status === 400);

/** /console/ipvm/detail/:type/:id — one instance: overview, login, billing and its operation log. */
export default function IpvmDetailPage() {
  const { type = '', id = '' } = useParams();
  const { search } = useLocation();
  const instance = useQuery({
    ...instanceQueries.one(id),
    // Live while an operation is under way, like the lists.
    refetchInterval: (query) => (query.state.status !== 'error' && query.state.data && isBusy(query.state.data.status) ? BUSY_POLL_MS : false),
  });
  const listPath = listPathOf(instance.data?.category ?? (isCategory(type) ? type : 'Gpu'));
  const back = (
    <Link to={listPath}>
      <Button icon={<ArrowLeftOutlined />}>返回列表</Button>
    </Link>
  );

  // A link with another type (or none we know) still finds the instance; show it under its own.
  if (instance.data && instance.data.category !== type) return <Navigate to={detailPathOf(instance.data) + search} replace />;

  return (
    <PageFrame extra={back}>
      {instance.isPending ? (
        <Card>
          <Skeleton active paragraph={{ rows: 8 }} />
        </Card>
      ) : instance.isError && !instance.data ? (
        <Card>
          {isNotFound(instance.error) ? (
            <Result
              status="404"
              title="实例不存在或已释放"
              subTitle={`没有找到实例 ${id}，它可能已被释放，或不属于当前账号。`}
              extra={
                <Link to={listPath}>
                  <Button type="primary">返回实例列表</Button>
                </Link>
              }
            />
          ) : (
            <LoadError error={instance.error} onRetry={() => void instance.refetch()} />
          )}
        </Card>
      ) : (
        <>
          {instance.isError && !isNotFound(instance.error) && (
            <Alert
              type="warning"
              showIcon
              style={{ marginBottom: 16 }}
              title={`状态刷新失败：${instance.error.message}`}
              action={
                <Button size="small" onClick={() => void instance.refetch()}>
                  重试
                </Button>
              }
            />
          )}
          {instance.isError && isNotFound(instance.error) ? (
            <Card>
              <Result status="404" title="实例已释放" subTitle="该实例已释放，数据已清除。" extra={back} />
            </Card>
          ) : (
            <InstanceDetail instance={instance.data} />
          )}
        </>
      )}
    </PageFrame>
  );
}

function InstanceDetail({ instance: i }: { instance: Instance }) {
  const tab = useUrlState(readTab, writeTab);
  const actions = useInstanceActions();
  return (
    <Flex vertical gap={16}>
      <Card>
        <Flex vertical gap={12}>
          <Flex justify="space-between" align="flex-start" gap={16} wrap>
            <Flex vertical gap={6} style={{ minWidth: 0 }}>
              <Space size={10} align="center" wrap>
                <Typography.Title level={5} style={{ margin: 0 }}>
                  {i.name}
                </Typography.Title>
                <Button
                  type="text"
                  size="small"
                  icon={<EditOutlined />}
                  aria-label="修改名称"
                  disabled={i.status === 'Deleting'}
                  onClick={() => actions.rename(i)}
                />
                <InstanceStatusTags instance={i} />
              </Space>
              <Typography.Text type="secondary">
                {InstanceCategory.label(i.category)} · {i.regionName} · ID{' '}
                <Typography.Text className="mono" copyable={{ text: i.id, tooltips: ['复制 ID', '已复制'] }}>
                  {i.id}
                </Typography.Text>
              </Typography.Text>
            </Flex>
            <InstanceActionBar instance={i} actions={actions} />
          </Flex>
          {i.lastError && <Alert type="error" showIcon title={i.status === 'Unknown' ? HOST_LOST_TAG : '上次操作失败'} description={i.lastError} />}
          {i.scheduledStopAt && (
            <Alert
              type="info"
              showIcon
              title={`定时关机：${scheduledStopText(i.scheduledStopAt)}`}
              description="到时由系统关机；在此之前您关机或释放实例，定时关机自动取消。"
              action={
                <Space>
                  <Button size="small" onClick={() => actions.scheduleStop(i)}>
                    修改
                  </Button>
                  <Button size="small" onClick={() => actions.cancelScheduledStop(i)}>
                    取消
                  </Button>
                </Space>
              }
            />
          )}
          {i.releaseAt && <ReleaseWarning instance={i} />}
        </Flex>
      </Card>

      <Card>
        <Tabs
          activeKey={tab.value}
          onChange={(key) => tab.set(key as Tab, { replace: true })}
          items={[
            {
              key: 'overview',
              label: '概览',
              children: (
                <Flex vertical gap={24}>
                  <Overview instance={i} onChangeBandwidth={() => actions.changeBandwidth(i)} />
                  <MonitorPanel instance={i} />
                </Flex>
              ),
            },
            { key: 'access', label: '登录信息', children: <AccessPanel instance={i} /> },
            ...(i.access?.terminal ? [{ key: 'terminal', label: '终端', children: <TerminalPanel instance={i} /> }] : []),
            {
              key: 'billing',
              label: '计费',
              children: (
                <BillingPanel
                  instance={i}
                  onRenew={() => actions.renew(i)}
                  onAutoRenew={() => actions.autoRenew(i)}
                  onRefund={() => actions.refund(i)}
                  onConvert={(mode) => actions.convert(i, mode)}
                />
              ),
            },
            { key: 'disk', label: '数据盘', children: <DiskPanel instance={i} onExpand={() => actions.expandDisk(i)} /> },
            { key: 'log', label: '操作日志', children: <InstanceLog instanceId={i.id} /> },
          ]}
        />
      </Card>
      {actions.holder}
    </Flex>
  );
}

function ReleaseWarning({ instance: i }: { instance: Instance }) {
  const why = isPostpaid(i.cycle) ? '实例关机时间过长' : '包周期到期未续费';
  return (
    <Alert
      type="warning"
      showIcon
      title={`该实例将于 ${formatTime(i.releaseAt)} 自动释放`}
      description={`${why}，到时将释放实例，数据盘和系统盘的数据将被清除且无法恢复。如需保留，请在此之前开机或续费。`}
    />
  );
}

function Overview({ instance: i, onChangeBandwidth }: { instance: Instance; onChangeBandwidth: () => void }) {
  const catalogueImage = i.category === 'App' ? (i.applicationName ?? i.imageName) : (i.imageName ?? i.applicationName);
  const image = i.userImageId ? `我的镜像「${i.userImageName ?? i.userImageId}」${i.imageName ? `（基于 ${i.imageName}）` : ''}` : catalogueImage;
  return (
    <Descriptions
      column={{ xs: 1, md: 2 }}
      size="small"
      items={[
        { key: 'status', label: '状态', children: <InstanceStatusTags instance={i} /> },
        { key: 'mode', label: '运行模式', children: i.noCard ? '无卡模式（不挂载 GPU）' : '标准模式' },
        { key: 'config', label: '配置', children: configSummary(i) },
        {
          key: 'spec',
          label: 'CPU / 内存',
          children: i.noCard && i.noCardSpec ? `${i.noCardSpec}（无卡模式；有卡开机为 ${i.spec}）` : i.spec,
        },
        { key: 'region', label: '地区', children: i.regionName },
        { key: 'host', label: '主机', children: i.hostName ?? '--' },
        { key: 'image', label: i.category === 'App' ? '应用 / 镜像' : '镜像', children: image ?? '--' },
        { key: 'disk', label: '数据盘', children: `${i.dataDiskGb} GB（免费 ${i.freeDataDiskGb} GB）` },
        ...(i.bandwidthMbps > 0 ? [{ key: 'bandwidth', label: '公网带宽', children: <BandwidthValue instance={i} onChange={onChangeBandwidth} /> }] : []),
        { key: 'created', label: '创建时间', children: formatTime(i.createdAt) },
        { key: 'started', label: '最近开机', children: formatTime(i.startedAt) },
        { key: 'stopped', label: '最近关机', children: formatTime(i.stoppedAt) },
        {
          key: 'order',
          label: '订单',
          children: i.orderUid ? (
            <Link to={orderDetailPath({ kind: i.category === 'Gpu' || i.category === 'App' ? 'Personal' : 'default', orderUid: i.orderUid })} className="mono">
              {i.orderUid}
            </Link>
          ) : (
            '--'
          ),
        },
      ]}
    />
  );
}

function PasswordText({ password }: { password: string }) {
  const [shown, setShown] = useState(false);
  return (
    <Space size={4}>
      <Typography.Text className="mono" copyable={{ text: password, tooltips: ['复制密码', '已复制'] }} aria-label="登录密码">
        {shown ? password : '••••••••••'}
      </Typography.Text>
      <Button type="link" size="small" icon={shown ? <EyeInvisibleOutlined /> : <EyeOutlined />} onClick={() => setShown(!shown)}>
        {shown ? '隐藏' : '显示'}
      </Button>
    </Space>
  );
}

/** The bandwidth, with 调整 when the machine's bandwidth can change (e-commerce machines). */
function BandwidthValue({ instance: i, onChange }: { instance: Instance; onChange: () => void }) {
  const extra = i.bandwidthMbps - i.includedBandwidthMbps;
  return (
    <Space size={4}>
      <span data-testid="bandwidth">
        {i.bandwidthMbps} Mbps{extra > 0 ? `（含升级 ${extra} Mbps）` : ''}
      </span>
      {i.bandwidthChoices.length > 1 && (
        <Button type="link" size="small" disabled={!i.tasks.includes('changeBandwidth')} onClick={onChange}>
          调整带宽
        </Button>
      )}
    </Space>
  );
}

function TerminalPanel({ instance: i }: { instance: Instance }) {
  if (i.status !== 'Running') return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="实例未运行：开机后可在这里打开终端" />;
  return (
    <Suspense fallback={<Skeleton active paragraph={{ rows: 6 }} />}>
      <WebTerminal instance={i} />
    </Suspense>
  );
}

function AccessPanel({ instance: i }: { instance: Instance }) {
  const a = i.access;
  if (!a) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="实例尚未分配登录信息，开机后可在这里查看" />;
  const running = i.status === 'Running';
  return (
    <Flex vertical gap={16}>
      {!running && <Alert type="info" showIcon title="实例未运行：开机后才能通过 SSH、JupyterLab 或应用地址访问" />}
      <Descriptions
        column={1}
        size="small"
        bordered
        items={[
          {
            key: 'ssh',
            label: '登录指令',
            children: (
              <Typography.Text className="mono" copyable={{ text: a.sshCommand, tooltips: ['复制登录指令', '已复制'] }}>
                {a.sshCommand}
              </Typography.Text>
            ),
          },
          ...(a.sshKeyCommand
            ? [
                {
                  key: 'sshKey',
                  label: '公钥登录',
                  children: (
                    <Space size={8} wrap>
                      <Typography.Text className="mono" copyable={{ text: a.sshKeyCommand, tooltips: ['复制公钥登录指令', '已复制'] }}>
                        {a.sshKeyCommand}
                      </Typography.Text>
                      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                        用账号中心添加的公钥登录，无需密码
                      </Typography.Text>
                      <Link to={SSH_KEYS_PAGE}>管理公钥</Link>
                    </Space>
                  ),
                },
              ]
            : []),
          { key: 'password', label: '密码', children: <PasswordText password={a.sshPassword} /> },
          { key: 'host', label: '主机地址', children: <span className="mono">{a.sshHost}</span> },
          { key: 'port', label: '端口', children: <span className="mono">{a.sshPort}</span> },
          { key: 'user', label: '用户名', children: <span className="mono">{a.sshUser}</span> },
          ...(a.jupyterUrl
            ? [
                {
                  key: 'jupyter',
                  label: 'JupyterLab',
                  children: running ? (
                    <a href={a.jupyterUrl} target="_blank" rel="noreferrer">
                      打开 JupyterLab
                    </a>
                  ) : (
                    <Typography.Text type="secondary">开机后可用</Typography.Text>
                  ),
                },
              ]
            : a.missing?.jupyter
              ? [{ key: 'jupyter', label: 'JupyterLab', children: <Typography.Text type="warning">{a.missing.jupyter}</Typography.Text> }]
              : []),
          ...(a.serviceUrl
            ? [
                {
                  key: 'service',
                  label: '自定义服务',
                  children: (
                    <Space size={8} wrap>
                      {running ? (
                        <a href={a.serviceUrl} target="_blank" rel="noreferrer">
                          打开自定义服务
                        </a>
                      ) : (
                        <Typography.Text type="secondary">开机后可用</Typography.Text>
                      )}
                      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                        在实例内启动监听 6006 端口的 HTTP 服务（如 TensorBoard）后即可从这里访问
                      </Typography.Text>
                    </Space>
                  ),
                },
              ]
            : []),
          ...(a.appUrl
            ? [
                {
                  key: 'app',
                  label: '应用地址',
                  children: running ? (
                    <a href={a.appUrl} target="_blank" rel="noreferrer">
                      打开应用
                    </a>
                  ) : (
                    <Typography.Text type="secondary">开机后可用</Typography.Text>
                  ),
                },
              ]
            : []),
          // Programs reach the instance's ComfyUI with a token instead of a browser login.
          ...(a.appUrl && i.applicationId === 'comfyui' ? [{ key: 'appToken', label: 'API 令牌', children: <AppTokenPanel instanceId={i.id} /> }] : []),
        ]}
      />
    </Flex>
  );
}

function BillingPanel({
  instance: i,
  onRenew,
  onAutoRenew,
  onRefund,
  onConvert,
}: {
  instance: Instance;
  onRenew: () => void;
  onAutoRenew: () => void;
  onRefund: () => void;
  onConvert: (mode: 'dayToMonth' | 'transfer') => void;
}) {
  const postPaid = isPostpaid(i.cycle);
  return (
    <Flex vertical gap={16}>
      {i.releaseAt && <ReleaseWarning instance={i} />}
      <Descriptions
        column={{ xs: 1, md: 2 }}
        size="small"
        items={[
          {
            key: 'cycle',
            label: '计费方式',
            children: postPaid ? `${BillingCycle.label(i.cycle)}（按小时后付费）` : `${BillingCycle.label(i.cycle)}（包周期，预付费）`,
          },
          ...(postPaid
            ? [
                { key: 'hourly', label: '开机价格', children: <Price units={i.hourlyPrice} per="小时" /> },
                // No-card mode only exists for machines with cards.
                ...(i.gpuCount > 0 ? [{ key: 'noCard', label: '无卡模式价格', children: <Price units={i.noCardHourlyPrice} per="小时" /> }] : []),
                {
                  key: 'transfer',
                  label: '转长期租用',
                  children: (
                    <Space size={8} wrap>
                      <span>先结清本次运行的按量费用，再按包周/包月价格支付，支付后停止按量计费，无需重启</span>
                      {canTransferToLong(i) && (
                        <Button size="small" onClick={() => onConvert('transfer')}>
                          转长期租用
                        </Button>
                      )}
                    </Space>
                  ),
                },
              ]
            : [
                {
                  key: 'expire',
                  label: '到期时间',
                  children: (
                    <Space size={8} wrap>
                      {formatTime(i.expireAt)}
                      {canRenew(i) && (
                        <Button type="primary" size="small" onClick={onRenew}>
                          续费
                        </Button>
                      )}
                    </Space>
                  ),
                },
                ...(i.cycle === 'Day'
                  ? [
                      {
                        key: 'dayToMonth',
                        label: '日转月',
                        children: (
                          <Space size={8} wrap>
                            <span>按包月价格支付 1 个月，抵扣当前包日剩余整小时的实付价值（代金券部分不计）</span>
                            {canDayToMonth(i) && (
                              <Button size="small" onClick={() => onConvert('dayToMonth')}>
                                日转月
                              </Button>
                            )}
                          </Space>
                        ),
                      },
                    ]
                  : []),
                {
                  key: 'autoRenew',
                  label: '自动续费',
                  children: (
                    <Space size={8} wrap>
                      <span data-testid="auto-renew-state">{i.autoRenew ? '已开启（到期前从余额续费 1 个周期）' : '未开启'}</span>
                      {canRenew(i) && (
                        <Button size="small" onClick={onAutoRenew}>
                          设置
                        </Button>
                      )}
                    </Space>
                  ),
                },
                {
                  key: 'refund',
                  label: '退订',
                  children: (
                    <Space size={8} wrap>
                      <span>提前释放，按未使用的整天数退还实付的现金与赠送金（代金券不退）</span>
                      {canRenew(i) && (
                        <Button size="small" danger disabled={!canRefund(i)} onClick={onRefund}>
                          退订
                        </Button>
                      )}
                    </Space>
                  ),
                },
              ]),
          {
            key: 'disk',
            label: '数据盘',
            children:
              BigInt(i.diskDailyPrice) > 0n ? (
                <span>
                  超出免费 {i.freeDataDiskGb} GB 的部分 <Price units={i.diskDailyPrice} per="天" />
                  （关机后仍计费）
                </span>
              ) : (
                `${i.dataDiskGb} GB，在免费容量（${i.freeDataDiskGb} GB）内，不收费`
              ),
          },
          { key: 'release', label: '计划释放', children: i.releaseAt ? formatTime(i.releaseAt) : '--' },
        ]}
      />
      <Typography.Text type="secondary">
        {postPaid ? '按量计费实例开机期间按小时从余额扣费，余额不足时将自动关机。' : '包周期实例到期后将自动关机，未续费将被释放。'}
        费用明细见 <Link to={PAGE.bill}>账单</Link>。
      </Typography.Text>
    </Flex>
  );
}

/** The data disk: size, free and chargeable parts, what it costs, and 扩容 (a stopped instance only). */
function DiskPanel({ instance: i, onExpand }: { instance: Instance; onExpand: () => void }) {
  const postPaid = isPostpaid(i.cycle);
  const chargeable = Math.max(0, i.dataDiskGb - i.freeDataDiskGb);
  const blocked = taskBlocked(i, 'resizeDisk');
  return (
    <Flex vertical gap={16}>
      <Descriptions
        column={{ xs: 1, md: 2 }}
        size="small"
        items={[
          { key: 'size', label: '数据盘容量', children: <span data-testid="disk-size">{i.dataDiskGb} GB</span> },
          { key: 'free', label: '免费容量', children: `${i.freeDataDiskGb} GB` },
          { key: 'chargeable', label: '计费容量', children: `${chargeable} GB` },
          {
            key: 'cost',
            label: '费用',
            children: postPaid ? (
              BigInt(i.diskDailyPrice) > 0n ? (
                <span>
                  <Price units={i.diskDailyPrice} per="天" />
                  （按量计费，按小时扣费，关机后仍计费）
                </span>
              ) : (
                '在免费容量内，不收费'
              )
            ) : (
              `已包含在包周期费用内（到期 ${formatTime(i.expireAt)}）`
            ),
          },
        ]}
      />
      <Space size={12} wrap>
        <Tooltip title={blocked ?? undefined}>
          <Button type="primary" disabled={blocked !== null} onClick={onExpand}>
            扩容
          </Button>
        </Tooltip>
        <Typography.Text type="secondary">
          {blocked ??
            (postPaid ? '按量计费实例扩容无需预付，扩容后超出免费容量的部分按天计价、按小时扣费。' : '包周期实例扩容按剩余时间折算费用，支付后扩容。')}
        </Typography.Text>
      </Space>
      <Typography.Text type="secondary">
        数据盘只能扩容不能缩小，扩容需先关机。所有实例的数据盘见 <Link to={PAGE.gpudataDisk}>数据盘</Link>。
      </Typography.Text>
    </Flex>
  );
}

function InstanceLog({ instanceId }: { instanceId: string }) {
  // Beside ?tab=log, under names of its own: the tab keeps its place and the page survives a reload.
  const { paging, set } = useUrlPaging({ key: 'log' });
  return (
    <Flex vertical gap={12}>
      <OperationLogTable filter={{ instance: instanceId }} paging={paging} onPage={set} showInstance={false} emptyText="该实例暂无操作记录" />
      <Link to={`${PAGE.log}?instance=${encodeURIComponent(instanceId)}`}>在操作日志中查看</Link>
    </Flex>
  );
}
