/** API paths of spec §7 (and the foundation's additions in the same style). */
export const API = {
  smsCode: '/api/v1/users/verify/smscode',
  emailCode: '/api/v1/users/verify/emailcode',
  registerValidate: '/userapi/api/v2.1/register/validate',
  register: '/userapi/api/v2.1/register',
  login: '/userapi/api/v2.1/login',
  logout: '/userapi/api/v2.1/logout',
  passwordReset: '/userapi/api/v2.1/password/reset',
  meInfo: '/userapi/api/v2.1/users/me/info',
  meMobile: '/userapi/api/v2.1/users/me/mobile',
  meEmail: '/userapi/api/v2.1/users/me/email',
  mePassword: '/userapi/api/v2.1/users/me/password',
  meLogo: '/api/v1/users/me/logo',
  userMoney: '/billing/api/v1/user/money',
  userStatement: '/billing/api/v1/user/statement',
  recharge: '/billing/api/v1/recharge',
  rechargeOptions: '/billing/api/v1/recharge/options',
  rechargeOne: '/billing/api/v1/recharge/:id',
  rechargeCancel: '/billing/api/v1/recharge/:id/cancel',
  paymentNotify: '/billing/api/v1/payment/notify/:method',
  vouchers: '/order/api/v2.1/vouchers',
  gift: '/order/api/v2.1/gift',
  giftEligibility: '/order/api/v2.1/gift/eligibility',
  giftObtain: '/order/api/v2.1/gift/obtain',
  giftEffect: '/order/api/v2.1/gift/effect/:id',
  giftRenew: '/order/api/v2.1/gift/renew',
  cashCoupon: '/order/api/v2.1/cash/coupon',
  // Orders (spec §7): create per kind, then detail/pay/status/QR under /order/api/v2.1/{segment}/{order_uid}.
  gpuOrderCreate: '/infra/api/v2.1/gpu/order',
  aiOrderCreate: '/shinichi/api/v2.1/tiio/resource',
  orderCreate: '/infra/api/v2.1/order',
  orderList: '/order/api/v2.1/orders',
  orderListCsv: '/order/api/v2.1/orders/export',
  resourceProducts: '/shinichi/api/v2.1/tiio/resource/products',
  resourcePackages: '/order/api/v2.1/resource/packages',
  // Catalogue (spec §7)
  sizes: '/infra/api/v2.1/sizes',
  regions: '/infra/api/v2.1/regions',
  images: '/infra/api/v2.1/images',
  regionRecommend: '/infra/api/v2.1/region/recommend',
  gpuList: '/upgpu/api/v2.1/gpu/list',
  applicationList: '/upgpu/api/v2.1/application/list',
  roomList: '/upgpu/api/v2.1/room/list',
  defaultRoomList: '/upgpu/api/v2.1/default/room/list',
  gpuImages: '/upgpu/api/v2.1/gpu/images',
  gpuAvailableZones: '/upgpu/api/v2.1/gpu/available_zones',
  gpuAvailableGpuTypes: '/upgpu/api/v2.1/gpu/available_gpu_types',
  gpuTypeList: '/upgpu/api/v2.1/gpu_type/list',
  promotion: '/order/api/v2.1/promotion',
  // Price quotes (spec §7): the logged-in variant applies vouchers and the student discount.
  orderUserPrice: '/infra/api/v2.1/order/user/price',
  orderPrice: '/infra/api/v2.1/order/price',
  gpuOrderUserPrice: '/infra/api/v2.1/gpu/order/user/price',
  gpuOrderPrice: '/infra/api/v2.1/gpu/order/price',
  operatorCredit: '/api/v1/operator/credit',
  // Instances (issue 6): every category behind one set of calls, filtered by category.
  instances: '/upgpu/api/v2.1/instances',
  instance: '/upgpu/api/v2.1/instances/:id',
  instanceAction: '/upgpu/api/v2.1/instances/:id/:action',
  instanceName: '/upgpu/api/v2.1/instances/:id/name',
  instanceRenew: '/upgpu/api/v2.1/instances/:id/renew',
  instanceRenewPrice: '/upgpu/api/v2.1/instances/:id/renew/price',
  instancePassword: '/upgpu/api/v2.1/instances/:id/password',
  operationLogs: '/api/v1/operation/logs',
  devCompute: '/dev/compute',
  healthz: '/healthz',
  devOutbox: '/dev/outbox',
} as const;

/** Path prefixes that belong to the API: unknown paths under them are a JSON 404, never the web app. */
export const API_PREFIXES = [
  '/api/',
  '/userapi/',
  '/infra/',
  '/upgpu/',
  '/order/',
  '/billing/',
  '/shinichi/',
  '/v1/',
  '/dev/',
  '/files/',
  '/docs',
] as const;

export function isApiPath(url: string): boolean {
  const path = url.split('?')[0]!;
  return API_PREFIXES.some((p) => path === p.replace(/\/$/, '') || path.startsWith(p));
}

/** The path segment of each order kind under /order/api/v2.1 (spec §7). */
export const ORDER_SEGMENT = { Personal: 'gpu/order', Ai: 'tiio/resource', default: 'order' } as const;

export function orderPath(kind: keyof typeof ORDER_SEGMENT, orderUid: string, tail = ''): string {
  return `/order/api/v2.1/${ORDER_SEGMENT[kind]}/${orderUid}${tail}`;
}
