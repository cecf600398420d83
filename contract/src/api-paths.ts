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
  /** 余额保底: post-paid instances stop when the spendable balance falls below it. */
  meBalanceFloor: '/userapi/api/v2.1/users/me/balance-floor',
  /** 账号中心's SSH public keys (GET list, POST add) and one of them (DELETE). */
  meSshKeys: '/userapi/api/v2.1/users/me/ssh-keys',
  meSshKey: '/userapi/api/v2.1/users/me/ssh-keys/:id',
  userMoney: '/billing/api/v1/user/money',
  userStatement: '/billing/api/v1/user/statement',
  /** The ledger entries under one roll-up row of the statement. */
  userStatementGroup: '/billing/api/v1/user/statement/group',
  /** Hourly data-disk charges (storage bill detail). */
  storageCharges: '/billing/api/v1/storage/charges',
  recharge: '/billing/api/v1/recharge',
  rechargeOptions: '/billing/api/v1/recharge/options',
  rechargeOne: '/billing/api/v1/recharge/:id',
  rechargeCancel: '/billing/api/v1/recharge/:id/cancel',
  userRefunds: '/billing/api/v1/refunds',
  refundNotify: '/billing/api/v1/payment/refund-notify/:method',
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
  /** GET what one package paid for, newest first (paged): /compute/detail. */
  resourcePackageUsages: '/order/api/v2.1/resource/packages/:id/usages',
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
  /** Public site settings the operator configures (the customer-service link). */
  siteSettings: '/api/v1/site/settings',
  /** The operator's 用户协议 (user) and 隐私政策 (privacy), public. */
  siteAgreement: '/api/v1/site/agreements/:kind',
  // Price quotes (spec §7): the logged-in variant applies vouchers and the student discount.
  orderUserPrice: '/infra/api/v2.1/order/user/price',
  orderPrice: '/infra/api/v2.1/order/price',
  gpuOrderUserPrice: '/infra/api/v2.1/gpu/order/user/price',
  gpuOrderPrice: '/infra/api/v2.1/gpu/order/price',
  operatorCredit: '/api/v1/operator/credit',
  operatorRefunds: '/api/v1/operator/refunds',
  /** Give or take the operator role: `npm run operator -- grant|revoke` through the running server (its local token only). */
  operatorRole: '/api/v1/operator/role',
  // Invoices: requests by the account holder, issued or rejected by the operator.
  invoices: '/billing/api/v1/invoices',
  invoiceable: '/billing/api/v1/invoices/invoiceable',
  invoiceCancel: '/billing/api/v1/invoices/:id/cancel',
  operatorInvoices: '/api/v1/operator/invoices',
  operatorInvoiceIssue: '/api/v1/operator/invoices/:id/issue',
  operatorInvoiceReject: '/api/v1/operator/invoices/:id/reject',
  // Accounts (spec §7 for certification and student verification)
  certifyInfo: '/api/v1/certify/info',
  certifyPersonal: '/api/v1/certify/personal',
  certifyPersonalConfirm: '/api/v1/certify/personal/confirm',
  certifyEnterprise: '/api/v1/certify/enterprise',
  certifyEnterpriseConfirm: '/api/v1/certify/enterprise/confirm',
  certifyEnterpriseUpload: '/api/v1/certify/enterprise/upload',
  student: '/userapi/api/v3/student_verification',
  studentEmailCode: '/userapi/api/v3/student_verification/emailcode',
  studentImage: '/userapi/api/v3/student_verification/image',
  children: '/userapi/api/v2.1/children',
  child: '/userapi/api/v2.1/children/:id',
  childPassword: '/userapi/api/v2.1/children/:id/password',
  childLogin: '/userapi/api/v2.1/login/child',
  operatorReviews: '/api/v1/operator/reviews',
  operatorReview: '/api/v1/operator/reviews/:kind/:id',
  operatorReviewImage: '/api/v1/operator/reviews/:kind/:id/image',
  operatorUsers: '/api/v1/operator/users',
  operatorReviewLog: '/api/v1/operator/review-log',
  /** The model square's models and upstream channels as the operator edits them (the catalogue file's `models`, `modelChannels`). */
  operatorModelChannels: '/api/v1/operator/model-channels',
  operatorModelChannel: '/api/v1/operator/model-channels/:id',
  operatorModel: '/api/v1/operator/models/:id',
  /** 镜像登记: images the operator registers by reference (checked in the registry or the host's layout), offered in the catalogue. */
  operatorImages: '/api/v1/operator/images',
  operatorImage: '/api/v1/operator/images/:id',
  /** Operator roles and the audit trail (issue 32): the caller's permissions, operators and their roles, the audit log. */
  operatorMe: '/api/v1/operator/me',
  operatorAccounts: '/api/v1/operator/operators',
  operatorRoleGrant: '/api/v1/operator/roles/grant',
  operatorRoleRevoke: '/api/v1/operator/roles/revoke',
  operatorAudit: '/api/v1/operator/audit',
  /** Credits and debits with a reason; above the threshold a non-管理员's wait as a request for a second operator. */
  operatorMoney: '/api/v1/operator/money',
  operatorMoneyRequests: '/api/v1/operator/money-requests',
  operatorMoneyRequestApprove: '/api/v1/operator/money-requests/:id/approve',
  operatorMoneyRequestReject: '/api/v1/operator/money-requests/:id/reject',
  // Instances: every category behind one set of calls, filtered by category.
  instances: '/upgpu/api/v2.1/instances',
  instance: '/upgpu/api/v2.1/instances/:id',
  instanceAction: '/upgpu/api/v2.1/instances/:id/:action',
  instanceName: '/upgpu/api/v2.1/instances/:id/name',
  instanceHolder: '/upgpu/api/v2.1/instances/:id/holder',
  instanceRenew: '/upgpu/api/v2.1/instances/:id/renew',
  instanceRenewPrice: '/upgpu/api/v2.1/instances/:id/renew/price',
  instanceAutoRenew: '/upgpu/api/v2.1/instances/:id/auto-renew',
  /** 定时关机: one pending scheduled stop per instance (PUT sets it, DELETE cancels it). */
  instanceScheduledStop: '/upgpu/api/v2.1/instances/:id/scheduled-stop',
  instanceRefund: '/upgpu/api/v2.1/instances/:id/refund',
  /** The 概览 figures (GET, ?range=1h|24h|7d) and GPU 空闲自动关机 (GET, PUT) of an instance (modules/monitoring). */
  instanceMetrics: '/upgpu/api/v2.1/instances/:id/metrics',
  instanceIdleStop: '/upgpu/api/v2.1/instances/:id/idle-stop',
  instanceRefundPrice: '/upgpu/api/v2.1/instances/:id/refund/price',
  instanceDayToMonth: '/upgpu/api/v2.1/instances/:id/day-to-month',
  instanceDayToMonthPrice: '/upgpu/api/v2.1/instances/:id/day-to-month/price',
  instanceTransferToLong: '/upgpu/api/v2.1/instances/:id/transfer-to-long',
  instanceTransferToLongPrice: '/upgpu/api/v2.1/instances/:id/transfer-to-long/price',
  instancePassword: '/upgpu/api/v2.1/instances/:id/password',
  /** The web terminal: a WebSocket to a login shell inside the running instance (text out, JSON messages in). */
  instanceTerminal: '/upgpu/api/v2.1/instances/:id/terminal',
  /** 文件存储: GET lists a folder (?path=), DELETE removes a file or folder (?path=). */
  fileStore: '/upgpu/api/v2.1/filestore',
  /** POST multipart (field `file`) into the folder ?path=. */
  fileStoreUpload: '/upgpu/api/v2.1/filestore/upload',
  /** GET one file (?path=) as a download. */
  fileStoreDownload: '/upgpu/api/v2.1/filestore/download',
  fileStoreFolder: '/upgpu/api/v2.1/filestore/folder',
  fileStoreRename: '/upgpu/api/v2.1/filestore/rename',
  // AI 绘图 datasets (/sd/dataset): images and their captions, the input of LoRA training.
  sdDatasets: '/upgpu/api/v2.1/sd/datasets',
  sdDataset: '/upgpu/api/v2.1/sd/datasets/:id',
  /** GET lists the images (paged); POST multipart (fields `file`, one or more) adds images. */
  sdDatasetImages: '/upgpu/api/v2.1/sd/datasets/:id/images',
  /** PUT sets the caption, DELETE removes the image. */
  sdDatasetImage: '/upgpu/api/v2.1/sd/datasets/:id/images/:imageId',
  /** GET the image's bytes (works as an <img> source: the session cookie is enough for reading). */
  sdDatasetImageFile: '/upgpu/api/v2.1/sd/datasets/:id/images/:imageId/file',
  /** POST captions in bulk: set several, prefix a trigger word, find and replace. */
  sdDatasetCaptions: '/upgpu/api/v2.1/sd/datasets/:id/captions',
  /** POST multipart (field `file`): a zip of images with same-name .txt captions. */
  sdDatasetImport: '/upgpu/api/v2.1/sd/datasets/:id/import',
  /** GET the dataset as a zip laid out for sd-scripts: `<repeats>_<trigger>/<image>` and `<image>.txt`. */
  sdDatasetExport: '/upgpu/api/v2.1/sd/datasets/:id/export',
  // LoRA training (/sd/train): a quote before start, jobs, their live progress and files.
  sdTrainQuote: '/upgpu/api/v2.1/sd/train/quote',
  /** GET lists the jobs (paged); POST starts one (the estimate is held from the cash). */
  sdTrainJobs: '/upgpu/api/v2.1/sd/train/jobs',
  /** GET one job; DELETE removes a finished one with its files. */
  sdTrainJob: '/upgpu/api/v2.1/sd/train/jobs/:id',
  sdTrainJobCancel: '/upgpu/api/v2.1/sd/train/jobs/:id/cancel',
  /** GET server-sent events: the job (as GET returns it) each time it changes, until it ends. */
  sdTrainJobEvents: '/upgpu/api/v2.1/sd/train/jobs/:id/events',
  /** GET an epoch's LoRA file (.safetensors) as a download. */
  sdTrainJobLora: '/upgpu/api/v2.1/sd/train/jobs/:id/epochs/:epoch/lora',
  /** GET an epoch's sample image (PNG). */
  sdTrainJobSample: '/upgpu/api/v2.1/sd/train/jobs/:id/epochs/:epoch/sample',
  // Image generation (/sd/diffusion): tasks, their images (the gallery) and the LoRAs they may use.
  sdDiffusionQuote: '/upgpu/api/v2.1/sd/diffusion/quote',
  /** GET lists the tasks (paged, newest first); POST submits one (its price held from the cash). */
  sdDiffusionTasks: '/upgpu/api/v2.1/sd/diffusion/tasks',
  sdDiffusionTask: '/upgpu/api/v2.1/sd/diffusion/tasks/:id',
  sdDiffusionTaskCancel: '/upgpu/api/v2.1/sd/diffusion/tasks/:id/cancel',
  /** GET the gallery: every image made, newest first (paged). */
  sdDiffusionImages: '/upgpu/api/v2.1/sd/diffusion/images',
  /** DELETE removes an image from the gallery. */
  sdDiffusionImage: '/upgpu/api/v2.1/sd/diffusion/images/:id',
  /** GET the image (PNG). */
  sdDiffusionImageFile: '/upgpu/api/v2.1/sd/diffusion/images/:id/file',
  /** GET the LoRAs a task may use: the account's trained ones and the public ones. */
  sdLoras: '/upgpu/api/v2.1/sd/loras',
  // The ComfyUI area (/comfyui): the account's workflows (API format) and their runs, which are
  // generation tasks (sdDiffusionTasks with kind=workflow) whose images go to the same gallery.
  /** GET lists the workflows (paged, last changed first); POST saves a new one. */
  comfyWorkflows: '/upgpu/api/v2.1/comfyui/workflows',
  /** GET one (with its graph), PUT renames it or replaces its graph, DELETE removes it. */
  comfyWorkflow: '/upgpu/api/v2.1/comfyui/workflows/:id',
  /** POST { graph }: what a run would make and cost, or why it cannot run (40050009). */
  comfyQuote: '/upgpu/api/v2.1/comfyui/quote',
  /** POST { workflowId, requestId }: runs a saved workflow (its price held from the cash). */
  comfyRuns: '/upgpu/api/v2.1/comfyui/runs',
  /** The desktop of a 云桌面 / 云游戏 / 跨境电商 machine: a WebSocket carrying VNC (RFB) for noVNC. */
  instanceDesktop: '/upgpu/api/v2.1/instances/:id/desktop',
  /** GET the API token programs use for the instance's ComfyUI (Bearer or ?token=); POST makes a new one (the old one stops at once); DELETE revokes it. */
  instanceAppToken: '/upgpu/api/v2.1/instances/:id/app-token',
  instanceMigrate: '/upgpu/api/v2.1/instances/:id/migrate',
  instanceMigrateTargets: '/upgpu/api/v2.1/instances/:id/migrate/targets',
  // My data (spec §2 /console/gpudata): images saved from instances, shared by link; data disks.
  instanceImage: '/upgpu/api/v2.1/instances/:id/image',
  instanceDisk: '/upgpu/api/v2.1/instances/:id/disk',
  instanceDiskPrice: '/upgpu/api/v2.1/instances/:id/disk/price',
  // Public bandwidth of e-commerce machines (TrafficUpgrade / TrafficDowngrade).
  instanceBandwidth: '/upgpu/api/v2.1/instances/:id/bandwidth',
  instanceBandwidthPrice: '/upgpu/api/v2.1/instances/:id/bandwidth/price',
  userImages: '/upgpu/api/v2.1/images',
  userImage: '/upgpu/api/v2.1/images/:id',
  userImageName: '/upgpu/api/v2.1/images/:id/name',
  userImageShare: '/upgpu/api/v2.1/images/:id/share',
  sharedImage: '/upgpu/api/v2.1/images/shared/:id',
  // 共享镜像 by code: the owner's code of an image; the images other accounts shared with me.
  userImageShareCode: '/upgpu/api/v2.1/images/:id/share-code',
  receivedImages: '/upgpu/api/v2.1/images/received',
  receivedImage: '/upgpu/api/v2.1/images/received/:id',
  dataDisks: '/upgpu/api/v2.1/disks',
  operationLogs: '/api/v1/operation/logs',
  // Notices: the message center (站内信), delivery preferences, "有卡时通知我" subscriptions.
  messages: '/userapi/api/v2.1/messages',
  messagesUnread: '/userapi/api/v2.1/messages/unread-count',
  messageRead: '/userapi/api/v2.1/messages/:id/read',
  messagesReadAll: '/userapi/api/v2.1/messages/read-all',
  noticePreferences: '/userapi/api/v2.1/users/me/notice-preferences',
  gpuSubscriptions: '/userapi/api/v2.1/gpu-subscriptions',
  gpuSubscription: '/userapi/api/v2.1/gpu-subscriptions/:id',
  // The model service's console API (issue 14): the model square's data and API keys (the gateway itself is under /v1).
  modelModels: '/api/v1/model/models',
  modelKeys: '/api/v1/model/keys',
  modelKey: '/api/v1/model/keys/:id',
  modelStats: '/api/v1/model/stats',
  modelCalls: '/api/v1/model/calls',
  modelConversations: '/api/v1/model/conversations',
  modelConversation: '/api/v1/model/conversations/:id',
  devCompute: '/dev/compute',
  healthz: '/healthz',
  /** The orchestrator's probes: the process turns (livez), this replica should get traffic (readyz). */
  livez: '/livez',
  readyz: '/readyz',
  devOutbox: '/dev/outbox',
} as const;

/** Path prefixes that belong to the API: unknown paths under them are a JSON 404, never the web app. */
export const API_PREFIXES = ['/api/', '/userapi/', '/infra/', '/upgpu/', '/order/', '/billing/', '/shinichi/', '/v1/', '/dev/', '/files/', '/docs'] as const;

export function isApiPath(url: string): boolean {
  const path = url.split('?')[0]!;
  return API_PREFIXES.some((p) => path === p.replace(/\/$/, '') || path.startsWith(p));
}

/** The path segment of each order kind under /order/api/v2.1 (spec §7). */
export const ORDER_SEGMENT = { Personal: 'gpu/order', Ai: 'tiio/resource', default: 'order' } as const;

export function orderPath(kind: keyof typeof ORDER_SEGMENT, orderUid: string, tail = ''): string {
  return `/order/api/v2.1/${ORDER_SEGMENT[kind]}/${orderUid}${tail}`;
}
