/** Enumerations of spec §3/§4 with their Chinese labels. */

function labels<T extends string>(map: Record<T, string>) {
  return { values: Object.keys(map) as T[], label: (v: T) => map[v], map };
}

export const InstanceCategory = labels({
  Gpu: 'GPU 实例',
  Game: '云游戏',
  App: '镜像应用',
  Generic: 'CPU 实例',
  Desktop: '云桌面',
  Ebusiness: '跨境电商',
});
export type InstanceCategory = keyof typeof InstanceCategory.map;
/** Machines used through a graphical desktop in the browser (/rdp/:id): 云桌面, 云游戏, 跨境电商. */
export const DESKTOP_CATEGORIES: readonly InstanceCategory[] = ['Desktop', 'Game', 'Ebusiness'];

export const BillingCycle = labels({ Usage: '按量', Hour: '按时', Day: '按日', Week: '按周', Month: '按月' });
export type BillingCycle = keyof typeof BillingCycle.map;
export const BillingCycleUnit: Record<BillingCycle, string> = {
  Usage: '小时',
  Hour: '小时',
  Day: '天',
  Week: '周',
  Month: '月',
};

export const EducationLevel = labels({
  PhD: '博士',
  master: '硕士',
  undergraduate: '本科',
  specialist: '专科',
  other: '其他',
});
export type EducationLevel = keyof typeof EducationLevel.map;

export const OrderType = labels({
  NewBuy: '新购',
  Renew: '续费',
  Usage: '按量计费',
  Refund: '退款',
  OrderRefund: '订单退款',
  TrafficUpgrade: '带宽升级',
  TrafficDowngrade: '带宽降级',
  DayToMonth: '日转月',
  TransferToLong: '转长期租用',
  Time: '计时',
  ChangeDataDisk: '数据盘扩容',
});
export type OrderType = keyof typeof OrderType.map;

export const OrderStatus = labels({
  Unpaid: '未支付',
  Paid: '已支付',
  Success: '已完成',
  Failed: '处理失败',
  Expired: '已过期',
  Abated: '已失效',
  Cancelled: '已取消',
  Refunded: '已退款',
  Time: '计费中',
});
export type OrderStatus = keyof typeof OrderStatus.map;
export const OrderStatusColor: Record<OrderStatus, 'red' | 'green' | 'grey' | 'purple'> = {
  Unpaid: 'red',
  Paid: 'green',
  Success: 'green',
  Failed: 'red',
  Expired: 'grey',
  Abated: 'grey',
  Cancelled: 'grey',
  Refunded: 'red',
  Time: 'purple',
};

export const PaymentMethod = labels({ Balance: '余额', Alipay: '支付宝', Wechat: '微信支付' });
export type PaymentMethod = keyof typeof PaymentMethod.map;

export const ImageStatus = labels({
  Active_NotAllowedMigrate: '可用（不可迁移）',
  Active: '可用',
  BuildFail: '制作失败',
  Build: '制作中',
  Migrate: '迁移中',
});
export type ImageStatus = keyof typeof ImageStatus.map;
/** Tag colours of image statuses: building is under way (blue, live), usable green, failed red. */
export const ImageStatusColor: Record<ImageStatus, 'green' | 'red' | 'blue' | 'purple'> = {
  Active_NotAllowedMigrate: 'green',
  Active: 'green',
  BuildFail: 'red',
  Build: 'blue',
  Migrate: 'purple',
};

export const InstanceStatus = labels({
  Pending: '创建中',
  Starting: '开机中',
  Pending_Migrate: '数据迁移中',
  Running: '运行中',
  Stopped: '已关机',
  Shutdowning: '关机中（无卡模式）',
  Shutdown: '已关机（无卡模式）',
  Restarting: '重启中',
  Stopping: '关机中',
  Operating: '操作中',
  Unknown: '状态未知',
  Failed: '创建失败',
  Deleting: '销毁中',
  OperateFail: '操作失败',
});
export type InstanceStatus = keyof typeof InstanceStatus.map;

export const CertType = labels({ Uncertified: '未认证', Personal: '个人认证', Enterprise: '企业认证' });
export type CertType = keyof typeof CertType.map;

/** Init carries no label in the spec. */
export const CertStatus = labels({ Init: '', Pending: '审核中', Succeed: '已认证', Failed: '认证失败' });
export type CertStatus = keyof typeof CertStatus.map;

export const AccountType = labels({ personal: '个人账号', enterprise: '企业账号' });
export type AccountType = keyof typeof AccountType.map;

/** Discount rates shown as words (spec §9): 0.5 → 'five', 0.7 → 'seven'. */
export const DiscountLabel: Record<string, string> = { '0.5': 'five', '0.7': 'seven' };

export const SmsScene = labels({ register: '注册', login: '登录', mobile: '更换手机号', reset: '找回密码' });
export type SmsScene = keyof typeof SmsScene.map;

export const EmailScene = labels({ email: '绑定邮箱' });
export type EmailScene = keyof typeof EmailScene.map;

/** Child-account permission flags of spec §3/§6. */
export const PERMISSION_FLAGS = ['createGPUInstance', 'createImageAPP', 'openYunBucket', 'gpu', 'app', 'image', 'usingLLM', 'finance'] as const;
export type PermissionFlag = (typeof PERMISSION_FLAGS)[number];
export const PermissionLabel: Record<PermissionFlag, string> = {
  createGPUInstance: '创建 GPU 实例',
  createImageAPP: '创建镜像应用',
  openYunBucket: '开通云存储',
  gpu: '管理 GPU 实例',
  app: '管理镜像应用',
  image: '管理镜像与数据',
  usingLLM: '使用大模型服务',
  // Not in spec §6: without it a child sees only what it bought itself (its instances, orders, bills and log), never the parent's money.
  finance: '财务：查看余额、充值记录、全部账单与操作日志',
};

/** The period of a child account's spending limit: a Beijing calendar month, or everything it ever spent. */
export const SpendLimitPeriod = labels({ Month: '每月', Total: '累计' });
export type SpendLimitPeriod = keyof typeof SpendLimitPeriod.map;
