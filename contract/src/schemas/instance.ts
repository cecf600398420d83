/**
 * Instances (spec §3/§4): one state machine for every category, the actions a user may take, and
 * the views of an instance and its operation log.
 *
 * Two kinds of move change an instance's status: an action (a person or the system asks for it and
 * the server starts an operation on the compute driver) and an outcome (the driver reports what
 * really happened). INSTANCE_TRANSITIONS lists both; anything not listed is refused.
 */
import { z } from 'zod';
import { InstanceStatus, type InstanceCategory, type InstanceStatus as Status, type PermissionFlag } from '../enums.js';
import { categorySchema, cycleSchema, quoteSchema } from './catalogue.js';
import { moneySchema, pageOf, pagingQuerySchema, numeric } from './common.js';

/** What a user (or the system) can ask of an instance. */
export const INSTANCE_ACTIONS = ['start', 'startNoCard', 'stop', 'restart', 'release'] as const;
export type InstanceAction = (typeof INSTANCE_ACTIONS)[number];

export const InstanceActionLabel: Record<InstanceAction, string> = {
  start: '开机',
  startNoCard: '无卡模式开机',
  stop: '关机',
  restart: '重启',
  release: '释放',
};

/**
 * Work done to a machine by the driver while the instance waits: save it as an image, expand its
 * data disk, move it to another host of the same GPU type (migrate: its data goes along; free of
 * charge), change the public bandwidth of an e-commerce machine. All but the bandwidth change need a
 * stopped machine (with or without cards); a bandwidth change is applied live, so it may also start
 * from Running. The instance is Operating (Pending_Migrate while it moves) meanwhile. A task goes back
 * where it was, whether it succeeds or fails (a failure shows as OperateFail); a migration that
 * succeeds ends Stopped on the new host, one that fails goes back where it was on the old host.
 */
export const INSTANCE_TASKS = ['saveImage', 'resizeDisk', 'migrate', 'changeBandwidth'] as const;
export type InstanceTask = (typeof INSTANCE_TASKS)[number];
export const InstanceTaskLabel: Record<InstanceTask, string> = {
  saveImage: '保存镜像',
  resizeDisk: '数据盘扩容',
  migrate: '迁移到其他主机',
  changeBandwidth: '调整带宽',
};
const STOPPED: readonly Status[] = ['Stopped', 'Shutdown'];
/** The statuses each task may start from. */
export const TASK_FROM: Record<InstanceTask, readonly Status[]> = {
  saveImage: STOPPED,
  resizeDisk: STOPPED,
  migrate: STOPPED,
  changeBandwidth: ['Running', ...STOPPED],
};
/** The status an instance is in while a disk task runs. */
export const TASK_STATUS: Status = 'Operating';
/** The status an instance is in while it moves to another host. */
export const MIGRATE_STATUS: Status = 'Pending_Migrate';
/** Where a successful migration leaves the instance: stopped on its new host, ready to start with cards. */
export const MIGRATE_DONE_STATUS: Status = 'Stopped';

/** The status an instance is in while `task` runs. */
export function taskStatus(task: InstanceTask): Status {
  return task === 'migrate' ? MIGRATE_STATUS : TASK_STATUS;
}

export function canRunTask(task: InstanceTask, status: Status): boolean {
  return TASK_FROM[task].includes(status);
}

export function allowedTasks(status: Status): InstanceTask[] {
  return INSTANCE_TASKS.filter((t) => canRunTask(t, status));
}

/** POST …/instances/:id/migrate: to the given host, or (without one) to a host the server picks. Free of charge. */
export const migrateInstanceRequestSchema = z
  .object({
    hostId: z.string({ error: '主机编号必须是字符串' }).trim().min(1, { error: '主机编号不能为空' }).max(64, { error: '主机编号过长' }).optional(),
  })
  .nullish()
  .transform((v) => v ?? {});
export type MigrateInstanceRequest = z.output<typeof migrateInstanceRequestSchema>;

/** A host a stopped GPU instance may move to, as the migration dialog lists it (its own room first, then the freest). */
export const migrationTargetSchema = z.object({
  hostId: z.string(),
  hostName: z.string(),
  roomName: z.string(),
  /** In the instance's own room (its network and storage are nearest). */
  sameRoom: z.boolean(),
  gpuFree: z.number().int(),
  /** Whether it has the instance's cards free now. */
  available: z.boolean(),
});
export type MigrationTarget = z.infer<typeof migrationTargetSchema>;
export const migrationTargetListSchema = z.array(migrationTargetSchema);

/** What the compute driver reports back about an operation or a machine. */
export const INSTANCE_OUTCOMES = ['created', 'createFailed', 'started', 'startFailed', 'stopped', 'restarted', 'destroyed', 'lost', 'found'] as const;
export type InstanceOutcome = (typeof INSTANCE_OUTCOMES)[number];

/** Who may cause a move: the instance's owner (or a child with the category's permission), or the system. */
export type InstanceActor = 'user' | 'system';

interface ActionRule {
  from: readonly Status[];
  /** The status while the driver works; stopping a no-card instance goes through Shutdowning instead. */
  to: Status;
  by: readonly InstanceActor[];
}

/** Allowed actions: from which statuses, into which, and who may ask. */
export const ACTION_RULES: Record<InstanceAction, ActionRule> = {
  start: { from: ['Stopped', 'Shutdown'], to: 'Starting', by: ['user'] },
  startNoCard: { from: ['Stopped', 'Shutdown'], to: 'Starting', by: ['user'] },
  stop: { from: ['Running'], to: 'Stopping', by: ['user', 'system'] },
  restart: { from: ['Running'], to: 'Restarting', by: ['user'] },
  release: { from: ['Stopped', 'Shutdown', 'Failed'], to: 'Deleting', by: ['user', 'system'] },
};

/**
 * Outcomes, by the status the instance is in when the driver's report arrives. `lost` (the host went
 * away) can arrive in any live status; `found` (the reconciler saw the machine again) leaves Unknown
 * for whatever the driver says the machine is, so it is resolved in the service, not here.
 */
export const OUTCOME_RULES: Record<Exclude<InstanceOutcome, 'lost' | 'found'>, Partial<Record<Status, Status>>> = {
  created: { Pending: 'Starting' },
  createFailed: { Pending: 'Failed', Starting: 'Failed' },
  started: { Starting: 'Running' },
  startFailed: { Starting: 'Stopped' },
  stopped: { Stopping: 'Stopped', Shutdowning: 'Shutdown', Running: 'Stopped' },
  restarted: { Restarting: 'Running' },
  destroyed: { Deleting: 'Deleting' },
};

/** Statuses in which the machine exists and the driver is not busy with it. */
export const SETTLED_STATUSES: readonly Status[] = ['Running', 'Stopped', 'Shutdown', 'Failed'];
/** Statuses in which an operation is under way: the list refreshes itself while any row is in one. */
export const BUSY_STATUSES: readonly Status[] = ['Pending', 'Starting', 'Pending_Migrate', 'Shutdowning', 'Restarting', 'Stopping', 'Operating', 'Deleting'];
/** Statuses in which the machine exists and is idle: its password can be reset, expiry can stop it. */
export const IDLE_MACHINE_STATUSES: readonly Status[] = ['Running', 'Stopped', 'Shutdown'];

export function canResetPassword(status: Status): boolean {
  return IDLE_MACHINE_STATUSES.includes(status);
}

/** Statuses a host loss can hit. */
export const LOSABLE_STATUSES: readonly Status[] = [
  'Starting',
  'Running',
  'Stopped',
  'Shutdowning',
  'Shutdown',
  'Restarting',
  'Stopping',
  'Operating',
  'Pending_Migrate',
];

/** Every status pair the machine allows, derived from the rules above (for tests and documentation). */
export const INSTANCE_TRANSITIONS: Record<Status, Status[]> = (() => {
  const out = Object.fromEntries(InstanceStatus.values.map((s) => [s, new Set<Status>()])) as Record<Status, Set<Status>>;
  for (const rule of Object.values(ACTION_RULES)) for (const from of rule.from) out[from].add(rule.to);
  out.Running.add('Shutdowning'); // stop in no-card mode
  for (const map of Object.values(OUTCOME_RULES)) for (const [from, to] of Object.entries(map)) if (from !== to) out[from as Status].add(to!);
  for (const task of INSTANCE_TASKS) {
    for (const s of TASK_FROM[task]) {
      out[s].add(taskStatus(task)); // a task begins
      out[taskStatus(task)].add(s); // and ends where it began, done or failed (a migration ends Stopped, or back where it was)
    }
  }
  out[MIGRATE_STATUS].add(MIGRATE_DONE_STATUS);
  for (const s of LOSABLE_STATUSES) out[s].add('Unknown');
  for (const s of IDLE_MACHINE_STATUSES) out.Unknown.add(s);
  for (const task of INSTANCE_TASKS) out.Unknown.add(taskStatus(task)); // the host is back while a task was under way: it goes on
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]])) as Record<Status, Status[]>;
})();

/** Whether `action` is allowed in `status` for `actor`. */
export function canAct(action: InstanceAction, status: Status, actor: InstanceActor = 'user'): boolean {
  const rule = ACTION_RULES[action];
  return rule.from.includes(status) && rule.by.includes(actor);
}

/** The status an action moves an instance into. */
export function actionTarget(action: InstanceAction, noCard: boolean): Status {
  return action === 'stop' && noCard ? 'Shutdowning' : ACTION_RULES[action].to;
}

/** The status an outcome moves an instance into, or null if the report does not fit its status (ignored). */
export function outcomeTarget(outcome: Exclude<InstanceOutcome, 'lost' | 'found'>, status: Status): Status | null {
  return OUTCOME_RULES[outcome][status] ?? null;
}

export function allowedActions(status: Status): InstanceAction[] {
  return INSTANCE_ACTIONS.filter((a) => canAct(a, status));
}

/** Spec §6: which child permissions let a child manage instances of a category (a main account manages all). */
export const MANAGE_PERMISSIONS: Partial<Record<InstanceCategory, readonly PermissionFlag[]>> = {
  Gpu: ['createGPUInstance', 'gpu'],
  App: ['createImageAPP', 'app'],
};

export const InstanceStatusColor: Record<Status, 'green' | 'red' | 'grey' | 'purple' | 'orange' | 'blue'> = {
  Pending: 'blue',
  Starting: 'blue',
  Pending_Migrate: 'purple',
  Running: 'green',
  Stopped: 'grey',
  Shutdowning: 'orange',
  Shutdown: 'grey',
  Restarting: 'blue',
  Stopping: 'orange',
  Operating: 'purple',
  Unknown: 'orange',
  Failed: 'red',
  Deleting: 'orange',
  OperateFail: 'red',
};

// --- views -------------------------------------------------------------------

export const instanceAccessSchema = z.object({
  sshHost: z.string(),
  sshPort: z.number().int(),
  sshUser: z.string(),
  sshPassword: z.string(),
  sshCommand: z.string().describe('可直接复制的登录命令'),
  sshKeyCommand: z.string().nullable().describe('用账号中心添加的公钥登录的命令（不需要密码）；网关不支持公钥时为 null'),
  jupyterUrl: z.string().nullable(),
  appUrl: z.string().nullable().describe('镜像应用的访问地址'),
  terminal: z.boolean().describe('运行中可在控制台打开网页终端'),
  desktop: z.boolean().describe('运行中可在浏览器中打开远程桌面（/rdp/:id）'),
  serviceUrl: z.string().nullable().describe('自定义服务：实例内监听 6006 端口的 HTTP 服务的访问地址'),
  missing: z
    .object({ jupyter: z.string().optional(), service: z.string().optional(), desktop: z.string().optional() })
    .optional()
    .describe('运行中的实例的镜像缺少的服务，各附原因与可改用的镜像（如镜像没有 Notebook 时 JupyterLab 无法打开，jupyterUrl 为 null）'),
});

/**
 * The API token of an instance's ComfyUI: programs (ComfyUI clients) send it as `Authorization:
 * Bearer <token>` or `?token=` (websockets) to `apiUrl`. One per instance; a new one replaces it.
 */
export const appTokenSchema = z.object({
  token: z.string().nullable().describe('当前的 API 令牌；未生成或已吊销时为 null'),
  apiUrl: z.string().nullable().describe('程序访问该实例 ComfyUI 的地址（实例自己的域名）；实例没有 ComfyUI 时为 null'),
});
export type AppToken = z.infer<typeof appTokenSchema>;

export const instanceSchema = z.object({
  id: z.string(),
  name: z.string(),
  holderId: z.string().describe('持有该实例的账号：创建它的账号，或主账号交给的子账号（子账号只看到并管理自己持有的实例）'),
  category: categorySchema,
  status: z.enum(InstanceStatus.values),
  /** Display-only OperateFail: the last operation failed and the instance went back where it was. */
  lastError: z.string().nullable(),
  noCard: z.boolean().describe('无卡模式运行/关机'),
  regionId: z.string(),
  regionName: z.string(),
  roomId: z.string().nullable(),
  hostId: z.string().nullable(),
  hostName: z.string().nullable(),
  gpuTypeId: z.string().nullable(),
  gpuName: z.string().nullable(),
  gpuCount: z.number().int(),
  sizeId: z.string().nullable(),
  spec: z.string().describe('CPU/内存概要'),
  noCardSpec: z.string().nullable().describe('无卡模式下的 CPU/内存（运营配置，比有卡时少）；没有 GPU 的实例为 null'),
  imageId: z.string().nullable(),
  imageName: z.string().nullable(),
  applicationId: z.string().nullable(),
  applicationName: z.string().nullable(),
  dataDiskGb: z.number().int(),
  freeDataDiskGb: z.number().int(),
  bandwidthMbps: z.number().int().describe('公网带宽（Mbps）；GPU 实例为 0'),
  includedBandwidthMbps: z.number().int().describe('规格自带的带宽，不另收费'),
  bandwidthChoices: z.array(z.number().int()).describe('可调整到的带宽（Mbps）：电商机为规格自带带宽及其以上的档位；其他实例为空'),
  cycle: cycleSchema,
  hourlyPrice: moneySchema.describe('按量计费每小时价格（有卡）'),
  noCardHourlyPrice: moneySchema.describe('无卡模式每小时价格'),
  diskDailyPrice: moneySchema.describe('超出免费部分的数据盘每天价格（按量实例按小时扣费，每小时为其 1/24）'),
  expireAt: z.string().nullable().describe('包周期到期时间'),
  autoRenew: z.boolean().describe('包周期自动续费：到期前从余额续费一个周期单位'),
  releaseAt: z.string().nullable().describe('计划释放时间（关机超期或到期未续费）'),
  scheduledStopAt: z.string().nullable().describe('定时关机时间（未设置为 null）；到时由系统关机，用户关机或释放时取消'),
  access: instanceAccessSchema.nullable(),
  actions: z.array(z.enum(INSTANCE_ACTIONS)).describe('当前可执行的操作'),
  tasks: z.array(z.enum(INSTANCE_TASKS)).describe('当前可执行的任务（保存镜像、数据盘扩容、迁移到其他主机需先关机；电商机调整带宽可在运行中进行）'),
  userImageId: z.string().nullable().describe('由“我的镜像”创建时的镜像 ID'),
  userImageName: z.string().nullable(),
  orderUid: z.string().nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  stoppedAt: z.string().nullable(),
});
export type Instance = z.infer<typeof instanceSchema>;
export const instancePageSchema = pageOf(instanceSchema);
export type InstancePage = z.infer<typeof instancePageSchema>;

export const instanceListQuerySchema = pagingQuerySchema.extend({
  filterBy: z.string().trim().max(200).optional().describe('category,Gpu,status,Running,region,bj-b,application,comfyui|sd-webui'),
  search: z.string().trim().max(50).optional().describe('按名称或实例 ID 搜索'),
});

export const instanceIdParamsSchema = z.object({ id: z.uuid({ error: '实例 ID 格式不正确' }) });
export const instanceActionParamsSchema = instanceIdParamsSchema.extend({
  action: z.enum(INSTANCE_ACTIONS, { error: `操作必须是 ${INSTANCE_ACTIONS.join('、')} 之一` }),
});

/** PUT …/instances/:id/holder: the main account hands an instance to one of its children (null: takes it back). */
export const instanceHolderRequestSchema = z.object({
  childId: z.uuid({ error: '子账号 ID 格式不正确' }).nullable(),
});

export const renameInstanceRequestSchema = z.object({
  name: z.string({ error: '请输入实例名称' }).trim().min(1, { error: '请输入实例名称' }).max(30, { error: '实例名称最多 30 个字' }),
});

export const instanceOperationSchema = z.object({
  id: z.string(),
  instanceId: z.string(),
  instanceName: z.string(),
  category: categorySchema,
  action: z.string().describe('create、start、stop… 或 system 的计费停机等'),
  actionLabel: z.string(),
  actorId: z.string().nullable().describe('操作人（主账号或子账号）；系统为 null'),
  actorName: z.string(),
  fromStatus: z.enum(InstanceStatus.values).nullable(),
  toStatus: z.enum(InstanceStatus.values),
  detail: z.string(),
  createdAt: z.string(),
});
export type InstanceOperation = z.infer<typeof instanceOperationSchema>;
export const instanceOperationPageSchema = pageOf(instanceOperationSchema);
export type InstanceOperationPage = z.infer<typeof instanceOperationPageSchema>;
export const operationLogQuerySchema = pagingQuerySchema.extend({
  filterBy: z.string().trim().max(200).optional().describe('instance,<id>,actor,<子账号 id>,category,Gpu'),
});

/** POST …/instances/:id/renew (and …/renew/price): more of the instance's own prepaid cycle. */
export const renewInstanceRequestSchema = z.object({
  duration: numeric(z.number({ error: '时长必须是数字' }).int({ error: '时长必须是整数' }).min(1, { error: '时长至少为 1' }).max(365, { error: '时长过长' })),
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).optional(),
});
export type RenewInstanceRequest = z.infer<typeof renewInstanceRequestSchema>;

/** PUT …/instances/:id/auto-renew: a prepaid instance renews one unit of its cycle from the balance before expiry. */
export const autoRenewRequestSchema = z.object({
  autoRenew: z.boolean({ error: 'autoRenew 必须是 true 或 false' }),
});
export type AutoRenewRequest = z.infer<typeof autoRenewRequestSchema>;

/** The latest scheduled stop: 720 hours (30 days) ahead. */
export const SCHEDULED_STOP_MAX_HOURS = 720;
export const SCHEDULED_STOP_MIN_HOURS = 0.5;

/**
 * PUT …/instances/:id/scheduled-stop (定时关机): stop the instance at `at` (a future time, ISO 8601
 * with its offset, at most 720 hours ahead) or `hours` from now (0.5–720). One or the other; a new
 * schedule replaces the pending one.
 */
export const scheduledStopRequestSchema = z
  .object({
    at: z.iso.datetime({ offset: true, error: '关机时间格式不正确' }).optional().describe('关机时间（ISO 8601，含时区，如 2026-11-26T08:00:00+08:00）'),
    hours: numeric(
      z
        .number({ error: '小时数必须是数字' })
        .min(SCHEDULED_STOP_MIN_HOURS, { error: `小时数至少为 ${SCHEDULED_STOP_MIN_HOURS}` })
        .max(SCHEDULED_STOP_MAX_HOURS, { error: `小时数最多为 ${SCHEDULED_STOP_MAX_HOURS}` }),
    )
      .optional()
      .describe('多少小时后关机（0.5–720）'),
  })
  .refine((b) => (b.at === undefined) !== (b.hours === undefined), { error: '请选择关机时间，或填写多少小时后关机（二选一）' });
export type ScheduledStopRequest = z.infer<typeof scheduledStopRequestSchema>;

/**
 * GET …/instances/:id/refund/price: what releasing a prepaid instance early gives back. The unused
 * whole days (a started day counts as used) of what was paid in cash and gift credit, pro rata per
 * paying order, newest first; vouchers are not returned; minus the fee.
 */
export const prepaidRefundQuoteSchema = z.object({
  instanceId: z.string(),
  instanceName: z.string(),
  expireAt: z.string(),
  paid: moneySchema.describe('为当前包周期实付的金额（现金 + 赠送金 + 代金券）'),
  paidVoucher: moneySchema.describe('其中代金券抵扣部分（不退）'),
  totalDays: z.number().int().describe('已付费的天数'),
  usedDays: z.number().int().describe('已使用天数（不足一天按一天）'),
  unusedDays: z.number().int().describe('未使用的整天数'),
  refundable: moneySchema.describe('未使用部分折算的金额（手续费前，不含代金券）'),
  feeRate: z.string().describe('手续费比例，如 0 或 0.05'),
  fee: moneySchema,
  refund: moneySchema.describe('实退金额 = refundable − fee'),
  toCash: moneySchema,
  toGift: moneySchema,
  rule: z.string().describe('退订规则说明'),
});
export type PrepaidRefundQuote = z.infer<typeof prepaidRefundQuoteSchema>;

/** POST …/instances/:id/refund: the Refund order's number, what went back where, and the instance (being released). */
export const prepaidRefundResultSchema = prepaidRefundQuoteSchema.extend({
  orderUid: z.string(),
  instance: instanceSchema,
});
export type PrepaidRefundResult = z.infer<typeof prepaidRefundResultSchema>;

/**
 * POST …/instances/:id/day-to-month/price (and …/day-to-month, which creates the DayToMonth order):
 * a prepaid Day instance becomes Month: one month from now at the Month price, less a credit line
 * (kind credit) for the unused value of the current paid period.
 */
export const dayToMonthRequestSchema = z.object({
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).optional(),
});
export type DayToMonthRequest = z.infer<typeof dayToMonthRequestSchema>;

/** POST …/instances/:id/transfer-to-long(/price): a post-paid instance becomes prepaid Week or Month for `duration` units. */
export const transferToLongRequestSchema = z.object({
  cycle: z.enum(['Week', 'Month'], { error: '长期租用只能选择包周或包月' }),
  duration: numeric(z.number({ error: '时长必须是数字' }).int({ error: '时长必须是整数' }).min(1, { error: '时长至少为 1' }).max(12, { error: '时长最长 12' })),
  voucherId: z.uuid({ error: '代金券编号格式不正确' }).optional(),
});
export type TransferToLongRequest = z.infer<typeof transferToLongRequestSchema>;

/** The quote of a conversion: the order's price, the credit it includes, the new expiry if paid now, and the rule. */
export const conversionQuoteSchema = quoteSchema.extend({
  credit: moneySchema.describe('日转月：当前包日周期未使用部分折算的抵扣（正数）；转长期租用为 0'),
  creditHours: z.number().int().describe('抵扣按剩余的整小时数折算'),
  expireAt: z.string().describe('按现在支付时的新到期时间'),
  rule: z.string(),
});
export type ConversionQuote = z.infer<typeof conversionQuoteSchema>;
