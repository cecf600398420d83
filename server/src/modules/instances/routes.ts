import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  autoRenewRequestSchema,
  bandwidthQuoteSchema,
  changeBandwidthRequestSchema,
  changeBandwidthResponseSchema,
  conversionQuoteSchema,
  transferToLongRequestSchema,
  prepaidRefundQuoteSchema,
  prepaidRefundResultSchema,
  dataDiskListQuerySchema,
  dataDiskPageSchema,
  diskExpansionQuoteSchema,
  expandDiskRequestSchema,
  expandDiskResponseSchema,
  instanceActionParamsSchema,
  instanceIdParamsSchema,
  instanceListQuerySchema,
  instanceOperationPageSchema,
  instancePageSchema,
  instanceSchema,
  migrateInstanceRequestSchema,
  migrationTargetListSchema,
  operationLogQuerySchema,
  orderSchema,
  pageOf,
  pagingQuerySchema,
  quoteSchema,
  renameInstanceRequestSchema,
  instanceHolderRequestSchema,
  renewInstanceRequestSchema,
  saveImageRequestSchema,
  scheduledStopRequestSchema,
  storageChargeSchema,
  userImageSchema,
} from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import type { ChildService } from '../users/index.js';
import { appTokenRoutes, type AppTokens } from './app-token.js';
import type { ConversionService } from './conversions.js';
import type { DiskService } from './disks.js';
import type { MigrationService } from './migrate.js';
import type { PrepaidService } from './prepaid.js';
import type { RenewalService } from './renewal.js';
import type { SaveImageService } from './save-image.js';
import type { ScheduledStops } from './scheduled-stop.js';
import type { InstanceService } from './service.js';
import type { TrafficService } from './traffic.js';
import type { InstanceViews } from './views.js';

const tags = ['实例'];

export interface InstanceRoutesDeps {
  auth: AuthGuards;
  instances: InstanceService;
  instanceViews: InstanceViews;
  renewals: RenewalService;
  prepaid: PrepaidService;
  scheduledStops: ScheduledStops;
  conversions: ConversionService;
  migration: MigrationService;
  saveImage: SaveImageService;
  disks: DiskService;
  traffic: TrafficService;
  appTokens: AppTokens;
  /** The child an instance is handed to. */
  children: Pick<ChildService, 'child'>;
}

export async function instanceRoutes(app: FastifyInstance, deps: InstanceRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { auth, instances: s } = deps;
  const { requireAuth } = auth;

  r.get(
    API.instances,
    {
      schema: {
        tags,
        summary: '实例列表（filterBy：category、status、region；search：名称或 ID）',
        querystring: instanceListQuerySchema,
        response: { 200: instancePageSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.instanceViews.list(currentSession(req).user, req.query),
  );

  r.get(
    API.instance,
    { schema: { tags, summary: '实例详情（含登录信息）', params: instanceIdParamsSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => deps.instanceViews.get(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceAction,
    {
      schema: {
        tags,
        summary: '开机、无卡模式开机、关机、重启、释放（异步，状态随后更新）',
        params: instanceActionParamsSchema,
        response: { 200: instanceSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => s.act(currentSession(req).user, req.params.id, req.params.action),
  );

  r.post(
    API.instanceRenewPrice,
    {
      schema: { tags, summary: '续费报价（与购买同一计价）', params: instanceIdParamsSchema, body: renewInstanceRequestSchema, response: { 200: quoteSchema } },
      onRequest: requireAuth,
    },
    async (req) => deps.renewals.renewQuote(currentSession(req).user, req.params.id, req.body),
  );

  r.post(
    API.instanceRenew,
    {
      schema: {
        tags,
        summary: '续费：创建续费订单（支付后延长到期时间）',
        params: instanceIdParamsSchema,
        body: renewInstanceRequestSchema,
        response: { 200: orderSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.renewals.renew(currentSession(req).user, req.params.id, req.body),
  );

  r.put(
    API.instanceAutoRenew,
    {
      schema: {
        tags,
        summary: '包周期自动续费开关：到期前（AUTO_RENEW_LEAD_HOURS）从余额续费一个周期单位',
        params: instanceIdParamsSchema,
        body: autoRenewRequestSchema,
        response: { 200: instanceSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.prepaid.setAutoRenew(currentSession(req).user, req.params.id, req.body.autoRenew),
  );

  r.put(
    API.instanceScheduledStop,
    {
      schema: {
        tags,
        summary: '定时关机：在指定时间（at）或若干小时后（hours，0.5–720）由系统关机；重新设置即替换，用户关机或释放时取消',
        params: instanceIdParamsSchema,
        body: scheduledStopRequestSchema,
        response: { 200: instanceSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.scheduledStops.schedule(currentSession(req).user, req.params.id, req.body),
  );

  r.delete(
    API.instanceScheduledStop,
    { schema: { tags, summary: '取消定时关机', params: instanceIdParamsSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => deps.scheduledStops.cancel(currentSession(req).user, req.params.id),
  );

  r.get(
    API.instanceRefundPrice,
    {
      schema: {
        tags,
        summary: '退订报价：未使用整天数按实付比例退回现金与赠送金（代金券不退）',
        params: instanceIdParamsSchema,
        response: { 200: prepaidRefundQuoteSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.prepaid.refundQuote(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceRefund,
    {
      schema: {
        tags,
        summary: '退订：退还未使用时长（退款订单）并释放实例，数据将被销毁',
        params: instanceIdParamsSchema,
        response: { 200: prepaidRefundResultSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.prepaid.refund(currentSession(req).user, req.params.id),
  );

  r.get(
    API.instanceDayToMonthPrice,
    {
      schema: {
        tags,
        summary: '日转月报价：包月价格减去当前包日周期未使用部分（按剩余整小时、按实付比例折算）',
        params: instanceIdParamsSchema,
        response: { 200: conversionQuoteSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.conversions.dayToMonthQuote(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceDayToMonth,
    {
      schema: {
        tags,
        summary: '日转月：创建日转月订单（支付后改为包月，到期时间为支付时起 1 个月）',
        params: instanceIdParamsSchema,
        response: { 200: orderSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.conversions.dayToMonth(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceTransferToLongPrice,
    {
      schema: {
        tags,
        summary: '转长期租用报价（按量计费 → 包周/包月）',
        params: instanceIdParamsSchema,
        body: transferToLongRequestSchema,
        response: { 200: conversionQuoteSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.conversions.transferQuote(currentSession(req).user, req.params.id, req.body),
  );

  r.post(
    API.instanceTransferToLong,
    {
      schema: {
        tags,
        summary: '转长期租用：先结清本次运行的按量费用，再创建订单（支付后停止按量计费）',
        params: instanceIdParamsSchema,
        body: transferToLongRequestSchema,
        response: { 200: orderSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.conversions.transfer(currentSession(req).user, req.params.id, req.body),
  );

  r.put(
    API.instanceName,
    {
      schema: { tags, summary: '修改实例名称', params: instanceIdParamsSchema, body: renameInstanceRequestSchema, response: { 200: instanceSchema } },
      onRequest: requireAuth,
    },
    async (req) => s.rename(currentSession(req).user, req.params.id, req.body.name),
  );

  r.put(
    API.instanceHolder,
    {
      schema: {
        tags,
        summary: '把实例交给子账号管理（childId 为 null 时收回到主账号）',
        params: instanceIdParamsSchema,
        body: instanceHolderRequestSchema,
        response: { 200: instanceSchema },
      },
      onRequest: deps.auth.requireMainAccount,
    },
    async (req) => {
      const { user } = currentSession(req);
      const child = req.body.childId === null ? null : await deps.children.child(user.id, req.body.childId);
      return s.hand(user, req.params.id, child);
    },
  );

  r.put(
    API.instancePassword,
    { schema: { tags, summary: '重置 root 密码', params: instanceIdParamsSchema, response: { 200: instanceSchema } }, onRequest: requireAuth },
    async (req) => s.resetPassword(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceMigrate,
    {
      schema: {
        tags,
        summary: '迁移到其他主机（免费）：已关机的实例连同数据盘迁到同地区同型号、有空闲卡的主机（可指定 hostId），期间为数据迁移中，完成后为已关机',
        params: instanceIdParamsSchema,
        body: migrateInstanceRequestSchema,
        response: { 200: instanceSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.migration.migrate(currentSession(req).user, req.params.id, req.body ?? {}),
  );

  r.get(
    API.instanceMigrateTargets,
    {
      schema: {
        tags,
        summary: '可迁移到的主机：同地区同型号 GPU 的其他主机，本机房优先，附当前空闲卡数',
        params: instanceIdParamsSchema,
        response: { 200: migrationTargetListSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.migration.targetList(currentSession(req).user, req.params.id),
  );

  r.post(
    API.instanceImage,
    {
      schema: {
        tags,
        summary: '保存镜像：已关机（含无卡模式关机）的实例制作为“我的镜像”，期间实例为操作中',
        params: instanceIdParamsSchema,
        body: saveImageRequestSchema,
        response: { 200: userImageSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.saveImage.save(currentSession(req).user, req.params.id, req.body),
  );

  r.post(
    API.instanceDiskPrice,
    {
      schema: {
        tags,
        summary: '数据盘扩容报价（包周期按剩余时间折算；按量为 0，扩容后按小时扣费）',
        params: instanceIdParamsSchema,
        body: expandDiskRequestSchema,
        response: { 200: diskExpansionQuoteSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.disks.quote(currentSession(req).user, req.params.id, req.body.dataDiskGb),
  );

  r.post(
    API.instanceDisk,
    {
      schema: {
        tags,
        summary: '数据盘扩容（需先关机）：包周期创建扩容订单（支付后扩容）；按量计费直接扩容',
        params: instanceIdParamsSchema,
        body: expandDiskRequestSchema,
        response: { 200: expandDiskResponseSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.disks.expand(currentSession(req).user, req.params.id, req.body.dataDiskGb),
  );

  r.post(
    API.instanceBandwidthPrice,
    {
      schema: {
        tags,
        summary: '电商机调整带宽报价（包周期升级按剩余时间折算；降级与按量计费无需预付）',
        params: instanceIdParamsSchema,
        body: changeBandwidthRequestSchema,
        response: { 200: bandwidthQuoteSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.traffic.quote(currentSession(req).user, req.params.id, req.body.bandwidthMbps),
  );

  r.post(
    API.instanceBandwidth,
    {
      schema: {
        tags,
        summary: '电商机调整带宽（运行中或已关机均可）：包周期升级创建 TrafficUpgrade 订单（支付后生效）；降级与按量计费直接生效',
        params: instanceIdParamsSchema,
        body: changeBandwidthRequestSchema,
        response: { 200: changeBandwidthResponseSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.traffic.change(currentSession(req).user, req.params.id, req.body.bandwidthMbps),
  );

  // Spec §6: a child account sees the data disks with openYunBucket or image ("my data").
  r.get(
    API.dataDisks,
    {
      schema: { tags, summary: '数据盘列表（容量、已用、计费容量、每天费用）', querystring: dataDiskListQuerySchema, response: { 200: dataDiskPageSchema } },
      onRequest: deps.auth.requirePermission('openYunBucket', 'image'),
    },
    async (req) => deps.disks.list(currentSession(req).user, req.query),
  );

  r.get(
    API.storageCharges,
    {
      schema: {
        tags: ['费用'],
        summary: '存储账单明细：超出免费容量的数据盘每小时扣费（每小时为日价的 1/24）',
        querystring: pagingQuerySchema,
        response: { 200: pageOf(storageChargeSchema) },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.disks.charges(currentSession(req).user, req.query),
  );

  r.get(
    API.operationLogs,
    {
      schema: {
        tags,
        summary: '操作日志（filterBy：instance、actor、category）',
        querystring: operationLogQuerySchema,
        response: { 200: instanceOperationPageSchema },
      },
      onRequest: requireAuth,
    },
    async (req) => deps.instanceViews.operations(currentSession(req).user, req.query),
  );
  await appTokenRoutes(app, deps);
}
