/**
 * Notices that arrive: the message center (站内信), the per-kind delivery preferences of 账号中心
 * and the "有卡时通知我" subscriptions of the GPU market and of a start refused for busy cards.
 */
import { z } from 'zod';
import { numeric, pagingQuerySchema, pageOf } from './common.js';

/** What a notice is about; the user chooses per kind whether it also goes by SMS and by e-mail. */
export const NOTICE_KINDS = ['BalanceLow', 'StoppedForArrears', 'PrepaidExpiring', 'ReleaseCountdown', 'GpuAvailable', 'InstanceEvent', 'IdleStop'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

export const NoticeKindLabel: Record<NoticeKind, string> = {
  BalanceLow: '余额不足提醒',
  StoppedForArrears: '欠费关机通知',
  PrepaidExpiring: '包周期到期提醒',
  ReleaseCountdown: '实例释放倒计时',
  GpuAvailable: '有卡通知',
  InstanceEvent: '实例异常通知',
  IdleStop: 'GPU 空闲关机提醒',
};

/** When each kind is sent, as 账号中心 explains it. */
export const NoticeKindDescription: Record<NoticeKind, string> = {
  BalanceLow: '可用余额不足以支付按量实例未来 2 小时的费用时提醒一次，充值后重新计算',
  StoppedForArrears: '余额耗尽、按量实例被自动关机时',
  PrepaidExpiring: '包日 / 包周 / 包月实例到期前、自动续费失败时与到期关机时',
  ReleaseCountdown: '已关机的实例释放前 7 天和 1 天',
  GpuAvailable: '订阅「有卡时通知我」的 GPU 型号在该地区有空闲卡时（通知一次）',
  InstanceEvent: '实例创建失败、主机失联、迁移或扩容失败等',
  IdleStop: '开启「GPU 空闲自动关机」的实例关机前 30 分钟与关机时',
};

/**
 * Delivery when the user has not chosen: 站内信 always; SMS for what stops or deletes a machine (and
 * what the user asked to hear about); e-mail for every kind when the account has an e-mail address.
 */
export const NOTICE_DEFAULTS: Record<NoticeKind, { sms: boolean; mail: boolean }> = {
  BalanceLow: { sms: false, mail: true },
  StoppedForArrears: { sms: true, mail: true },
  PrepaidExpiring: { sms: true, mail: true },
  ReleaseCountdown: { sms: true, mail: true },
  GpuAvailable: { sms: true, mail: true },
  InstanceEvent: { sms: true, mail: true },
  IdleStop: { sms: true, mail: true },
};

export const noticeKindSchema = z.enum(NOTICE_KINDS, { error: `通知类型须为 ${NOTICE_KINDS.join('、')} 之一` });

/** One 站内信. */
export const noticeMessageSchema = z.object({
  id: z.string(),
  kind: noticeKindSchema,
  title: z.string(),
  body: z.string(),
  /** Where the console shows what it is about (an instance, the GPU market), if anywhere. */
  link: z.string().nullable(),
  createdAt: z.string(),
  readAt: z.string().nullable(),
});
export type NoticeMessage = z.infer<typeof noticeMessageSchema>;
export const noticeMessagePageSchema = pageOf(noticeMessageSchema);
export type NoticeMessagePage = z.infer<typeof noticeMessagePageSchema>;

export const noticeMessageListQuerySchema = pagingQuerySchema.extend({
  /** Only the unread ones. */
  unread: z.enum(['true', 'false'], { error: 'unread 须为 true 或 false' }).optional(),
});
export type NoticeMessageListQuery = z.input<typeof noticeMessageListQuerySchema>;

export const noticeMessageIdParamsSchema = z.object({ id: z.uuid({ error: '消息编号不正确' }) });
export const noticeUnreadSchema = z.object({ count: z.number().int() });
export type NoticeUnread = z.infer<typeof noticeUnreadSchema>;
/** How many messages a "mark all read" changed. */
export const noticeReadAllSchema = z.object({ count: z.number().int() });

/** One kind's delivery: 站内信 is always on; SMS and e-mail as the user chose (or the defaults). */
export const noticePreferenceSchema = z.object({
  kind: noticeKindSchema,
  label: z.string(),
  description: z.string(),
  site: z.literal(true),
  sms: z.boolean(),
  mail: z.boolean(),
});
export type NoticePreference = z.infer<typeof noticePreferenceSchema>;

export const noticePreferencesSchema = z.object({
  items: z.array(noticePreferenceSchema),
  /** Where SMS and e-mail go; null: that channel has nowhere to go (bind one in 基本信息). */
  mobile: z.string().nullable(),
  email: z.string().nullable(),
});
export type NoticePreferences = z.infer<typeof noticePreferencesSchema>;

export const noticePreferencesUpdateSchema = z.object({
  items: z
    .array(z.object({ kind: noticeKindSchema, sms: z.boolean({ error: 'sms 须为 true 或 false' }), mail: z.boolean({ error: 'mail 须为 true 或 false' }) }))
    .min(1, { error: '请至少提交一种通知的设置' })
    .max(NOTICE_KINDS.length, { error: '通知类型重复' })
    .refine((items) => new Set(items.map((i) => i.kind)).size === items.length, { error: '通知类型重复' }),
});
export type NoticePreferencesUpdate = z.infer<typeof noticePreferencesUpdateSchema>;

/** Most "有卡时通知我" subscriptions waiting at once per account. */
export const GPU_SUBSCRIPTION_LIMIT = 20;

const catalogueId = (label: string) =>
  z
    .string({ error: `请选择${label}` })
    .trim()
    .min(1, { error: `请选择${label}` })
    .max(64, { error: `${label}编号过长` });

export const gpuSubscriptionRequestSchema = z.object({
  gpuTypeId: catalogueId('GPU 型号'),
  regionId: catalogueId('地区'),
  /** Cards one host must have free (a 4-card instance needs 4 on one host); default 1. */
  gpuCount: numeric(
    z
      .number({ error: '卡数须为 1–8 的整数' })
      .int({ error: '卡数须为 1–8 的整数' })
      .min(1, { error: '卡数须为 1–8 的整数' })
      .max(8, { error: '卡数须为 1–8 的整数' }),
  ).default(1),
});
export type GpuSubscriptionRequest = z.input<typeof gpuSubscriptionRequestSchema>;

export const gpuSubscriptionSchema = z.object({
  id: z.string(),
  gpuTypeId: z.string(),
  gpuName: z.string(),
  regionId: z.string(),
  regionName: z.string(),
  gpuCount: z.number().int(),
  createdAt: z.string(),
  /** When the cards were free and the user was told; null while waiting. */
  notifiedAt: z.string().nullable(),
});
export type GpuSubscription = z.infer<typeof gpuSubscriptionSchema>;
export const gpuSubscriptionListSchema = z.object({ items: z.array(gpuSubscriptionSchema), limit: z.number().int() });
export type GpuSubscriptionList = z.infer<typeof gpuSubscriptionListSchema>;
export const gpuSubscriptionIdParamsSchema = z.object({ id: z.uuid({ error: '订阅编号不正确' }) });
