/**
 * The one error catalogue shared by server and web (DESIGN.md "API conventions").
 * A code is 8 digits; its first three digits are the HTTP status it travels with.
 * `message` is what a user reads; the server may add a specific `detail`.
 */
export const ERRORS = {
  // 400 — input
  VALIDATION_FAILED: { code: 40000001, message: '请求参数不正确' },
  BAD_JSON: { code: 40000002, message: '请求内容不是有效的 JSON' },
  SMS_CODE_WRONG: { code: 40010001, message: '验证码错误，请重新输入' },
  SMS_CODE_EXPIRED: { code: 40010002, message: '验证码已失效，请重新获取' },
  SMS_CODE_LOCKED: { code: 40010003, message: '验证码错误次数过多，请重新获取验证码' },
  PASSWORD_TOO_WEAK: { code: 40010004, message: '密码强度不足：需 8-32 位，且同时包含字母和数字' },
  LOGIN_FAILED: { code: 40010005, message: '账号或密码错误' },
  MOBILE_NOT_REGISTERED: { code: 40010006, message: '该手机号尚未注册，请先注册' },
  OLD_PASSWORD_WRONG: { code: 40010007, message: '原密码错误' },
  UPLOAD_NOT_IMAGE: { code: 40010008, message: '请上传 PNG、JPEG、WEBP 或 GIF 格式的图片' },
  UPLOAD_MISSING: { code: 40010009, message: '请选择要上传的文件' },
  UPLOAD_MALFORMED: { code: 40010011, message: '上传内容不完整或格式不正确，请重新上传' },
  SAME_MOBILE: { code: 40010010, message: '新手机号与当前手机号相同' },
  INSUFFICIENT_BALANCE: { code: 40011001, message: '余额不足，请先充值' },
  UNPAID_ORDER_EXISTS: { code: 40011007, message: '存在未支付订单，无法创建新订单' },
  // Catalogue and price quotes
  CATALOGUE_ITEM_NOT_FOUND: { code: 40020001, message: '所选配置不存在或已下架，请重新选择' },
  VOUCHER_UNUSABLE: { code: 40020002, message: '该代金券不可用，请更换或不使用代金券' },
  PRODUCT_NOT_ON_SALE: { code: 40020004, message: '该产品暂未开放购买' },
  ORDER_STATE_INVALID: { code: 40020005, message: '订单当前状态不能进行此操作' },
  ORDER_EXPIRED: { code: 40020006, message: '订单已过期，请重新下单' },
  GIFT_NOT_ELIGIBLE: { code: 40020007, message: '当前不能领取赠送金' },
  GIFT_RENEW_NEEDS_RECHARGE: { code: 40020008, message: '续期赠送金需先完成一次充值' },
  GIFT_NOT_RENEWABLE: { code: 40020009, message: '没有可续期的赠送金' },
  INSTANCE_STATE_INVALID: { code: 40020010, message: '实例当前状态不能进行此操作' },
  INSTANCE_GPU_BUSY: { code: 40920002, message: '该主机的 GPU 已被占用，可迁移到其他主机（免费）、选择无卡模式开机，或稍后再试' },
  INSTANCE_ARREARS: { code: 40011002, message: '账户欠费，请先充值结清后再开机' },
  INSTANCE_EXPIRED: { code: 40020011, message: '实例已到期，请先续费再开机' },
  ORDER_NOT_USAGE: { code: 40020013, message: '该订单不是按量计费订单，没有用量明细，费用见订单详情' },
  IMAGE_INCOMPATIBLE: { code: 40020003, message: '所选镜像与该配置不兼容，请更换镜像' },
  // My data: saved images and data disks, codes 4xx21xxx.
  INSTANCE_MUST_BE_STOPPED: { code: 40021001, message: '请先关机（或在无卡模式下关机）再进行此操作' },
  DATA_DISK_SIZE_INVALID: { code: 40021002, message: '数据盘容量不正确' },
  IMAGE_LIMIT_REACHED: { code: 40021003, message: '镜像数量已达上限，请先删除不需要的镜像' },
  IMAGE_STATE_INVALID: { code: 40021004, message: '镜像当前状态不能进行此操作' },
  IMAGE_SHARE_CODE_OWN: { code: 40021005, message: '这是你自己镜像的共享码，自己的镜像已在列表中，无需添加' },
  // Prepaid instances: auto-renew and refund of unused time, codes 4xx23xxx.
  INSTANCE_NOT_PREPAID: { code: 40023001, message: '按量计费实例不支持此操作，仅包日、包周、包月实例可以自动续费或退订' },
  REFUND_EXPIRED: { code: 40023002, message: '实例已到期，不能退订；到期后的实例可续费或等待释放' },
  REFUND_NOTHING: { code: 40023003, message: '剩余时长不足 1 天，没有可退金额；如不再使用可直接释放' },
  REFUND_DONE: { code: 40923001, message: '该实例已退订，不能重复退订' },
  // Refunds to the original payment method, codes 4xx34xxx.
  REFUND_OVER_PAID: { code: 40034001, message: '退款金额超过该笔支付尚未退还的金额' },
  REFUND_NOT_PAID: { code: 40034002, message: '该笔支付未成功到账，不能退款' },
  /** The user has spent the money (or the recharge bonus): only what is still in cash can go back. */
  REFUND_OVER_CASH: { code: 40034003, message: '用户现金余额不足以退款：已消费的部分不能原路退回（按比例收回的赠送金不足时也从现金扣除）' },
  PAYMENT_NOT_FOUND: { code: 40434001, message: '找不到该交易号的支付记录，请核对交易号' },
  // Conversions of instances: day-to-month, post-paid to long-term rental, codes 4xx24xxx.
  CONVERT_NOT_DAY: { code: 40024001, message: '仅包日实例可以日转月' },
  CONVERT_NOT_POSTPAID: { code: 40024002, message: '仅按量计费实例可以转长期租用' },
  CONVERT_EXPIRED: { code: 40024003, message: '实例已到期，请先续费再转换' },
  CONVERT_ARREARS: { code: 40024004, message: '实例有欠费，请先充值结清后再转换' },
  // Migration of a stopped instance to another host, codes 4xx25xxx.
  MIGRATE_NO_HOST: { code: 40925001, message: '暂无可迁移的主机（同地区同型号 GPU 空闲卡或数据盘空间不足），请稍后再试，或使用无卡模式开机' },
  MIGRATE_HOST_INVALID: { code: 40025001, message: '所选主机不能作为迁移目标：须为同一地区、同一 GPU 型号的其他主机，且数据盘空间足够' },
  MIGRATE_NOT_GPU: { code: 40025002, message: '该实例没有 GPU，无需迁移' },
  // Public bandwidth of e-commerce machines, codes 4xx26xxx.
  BANDWIDTH_NOT_EBUSINESS: { code: 40026001, message: '仅电商机可以调整带宽' },
  BANDWIDTH_INVALID: { code: 40026002, message: '所选带宽不可用，请在可选档位中选择' },
  // Scheduled stop (定时关机), codes 4xx27xxx.
  SCHEDULED_STOP_TIME_INVALID: { code: 40027001, message: '定时关机时间须晚于当前时间，且在 30 天（720 小时）以内，请重新选择' },
  // Watching an instance: GPU 空闲自动关机, codes 4xx36xxx.
  IDLE_STOP_NO_GPU: { code: 40036001, message: '该实例没有 GPU，不能设置 GPU 空闲自动关机' },
  // Ways into a running instance (web terminal), codes 4xx29xxx.
  INSTANCE_NOT_RUNNING: { code: 40929001, message: '实例未运行，请先开机再打开终端' },
  TERMINAL_UNAVAILABLE: { code: 40029001, message: '该实例暂不支持网页终端，请使用 SSH 登录' },
  JUPYTER_UNAVAILABLE: { code: 40029002, message: '该实例暂不提供 Jupyter，请通过终端或 SSH 使用' },
  JUPYTER_STARTING: { code: 50329001, message: 'Jupyter 正在启动，请几秒后刷新页面' },
  SERVICE_UNAVAILABLE: { code: 40029003, message: '该实例暂不提供自定义服务访问' },
  DESKTOP_UNAVAILABLE: { code: 40029004, message: '该实例没有远程桌面：云桌面、云游戏和跨境电商实例开机后可用' },
  APP_UNAVAILABLE: { code: 40029007, message: '该实例没有可在浏览器中打开的镜像应用，或实例未在运行：请先开机' },
  APP_STARTING: { code: 50329003, message: '镜像应用正在启动，请几秒后刷新页面' },
  SERVICE_STARTING: { code: 50329002, message: '自定义服务的转发正在启动，请几秒后刷新页面' },
  TERMINAL_LIMIT: { code: 42929001, message: '打开的终端过多（每个账号最多 10 个），请先关闭不用的终端页面' },
  /** The count of a user's shells across the replicas could not be read (the database is away): no shell is opened uncounted. */
  TERMINAL_BUSY: { code: 50329004, message: '暂时无法打开终端，请稍后重新连接' },
  SSH_KEY_INVALID: {
    code: 40029005,
    message: '公钥格式不正确：请粘贴 .pub 文件（如 ~/.ssh/id_ed25519.pub）的一整行，以 ssh-ed25519、ssh-rsa 或 ecdsa-sha2- 开头',
  },
  SSH_KEY_LIMIT: { code: 40029006, message: '每个账号最多添加 20 个公钥，请先删除不用的' },
  SSH_KEY_DUPLICATE: { code: 40929002, message: '这个公钥已经添加过了' },
  // 文件存储, codes 4xx31xxx.
  DATASET_NOT_FOUND: { code: 40450001, message: '数据集不存在或已删除，请刷新列表' },
  DATASET_IMAGE_NOT_FOUND: { code: 40450002, message: '图片不存在或已删除，请刷新页面' },
  DATASET_IMAGE_INVALID: { code: 40050001, message: '文件不是可用的图片，请上传 png、jpg、webp 或 bmp 格式的图片' },
  DATASET_IMAGE_TOO_LARGE: { code: 41350001, message: '图片超过 20MB，请压缩后再上传' },
  DATASET_FULL: { code: 40050002, message: '一个数据集最多 512 张图片，请先删除部分图片' },
  DATASET_LIMIT: { code: 40050003, message: '每个账号最多 50 个数据集，请先删除不再使用的数据集' },
  DATASET_IMAGE_EXISTS: { code: 40950001, message: '数据集中已有同名图片（不区分扩展名和大小写），请改名后再上传' },
  DATASET_ZIP_INVALID: { code: 40050004, message: '压缩包无法读取，请上传 zip 格式的压缩包' },
  DATASET_EMPTY: { code: 40050005, message: '数据集中还没有图片，请先上传' },
  DATASET_ZIP_TOO_LARGE: { code: 41350002, message: '压缩包超过 200MB，请分成几个压缩包导入' },
  DATASET_ZIP_UNPACKED_TOO_LARGE: { code: 41350003, message: '压缩包解压后超过 256MB，请分成几个压缩包导入' },
  /** An account's second zip import while its first is under way: refused before the upload is read. */
  DATASET_IMPORT_ONGOING: { code: 42950001, message: '已有一个压缩包正在导入，请等它完成后再导入下一个' },
  /** More zip imports under way and waiting than the server takes on (datasets/zip-import.ts): refused before the upload is read. */
  DATASET_IMPORT_BUSY: { code: 50350003, message: '导入繁忙，请稍后再试' },
  /** A zip entry whose path climbs out of the archive (`..`), is absolute or names a drive: refused, never flattened. */
  DATASET_ZIP_ENTRY_UNSAFE: { code: 40050011, message: '压缩包中该文件的路径不安全（含 ..、以 / 开头或带盘符），已跳过；请把图片放在压缩包内的普通文件夹中' },
  RESOURCE_PACKAGE_NOT_FOUND: { code: 40450008, message: '资源包不存在，请刷新列表' },
  TRAIN_JOB_NOT_FOUND: { code: 40450003, message: '训练任务不存在或已删除，请刷新列表' },
  TRAIN_EPOCH_NOT_FOUND: { code: 40450004, message: '该轮的模型还没有保存，请等这一轮训练完成' },
  TRAIN_ACTIVE_LIMIT: { code: 40050006, message: '同时进行的训练任务最多 3 个，请等任务完成或取消后再试' },
  TRAIN_JOB_ENDED: { code: 40950002, message: '任务已结束，无需取消' },
  TRAIN_JOB_ACTIVE: { code: 40950003, message: '任务还在进行，请先取消再删除' },
  TRAIN_GPU_UNAVAILABLE: { code: 50350001, message: '训练所用的 GPU 暂未上架，请稍后再试或联系客服' },
  DIFFUSION_TASK_NOT_FOUND: { code: 40450005, message: '生成任务不存在或已删除，请刷新页面' },
  DIFFUSION_IMAGE_NOT_FOUND: { code: 40450006, message: '图片不存在或已删除，请刷新画廊' },
  DIFFUSION_LORA_NOT_FOUND: { code: 40450007, message: '所选 LoRA 不存在或尚未训练完成，请重新选择' },
  DIFFUSION_LORA_MISMATCH: { code: 40050007, message: 'LoRA 与所选底模不匹配（SD1.5 的 LoRA 只能用于 SD1.5，SDXL 同理），请更换底模或 LoRA' },
  DIFFUSION_ACTIVE_LIMIT: { code: 40050008, message: '同时进行的生成任务最多 3 个，请等任务完成后再试' },
  DIFFUSION_TASK_ENDED: { code: 40950004, message: '任务已结束，无需取消' },
  DIFFUSION_GPU_UNAVAILABLE: { code: 50350002, message: '生成所用的 GPU 暂未上架，请稍后再试或联系客服' },
  COMFY_WORKFLOW_NOT_FOUND: { code: 40450009, message: '工作流不存在或已删除，请刷新列表' },
  COMFY_WORKFLOW_INVALID: { code: 40050009, message: '工作流无法在共享算力上运行，请按提示修改节点' },
  COMFY_WORKFLOW_LIMIT: { code: 40950005, message: '工作流最多保存 100 个，请删除不用的再保存' },
  COMFY_WORKFLOW_NAME_TAKEN: { code: 40950006, message: '已有同名工作流，请换一个名称' },
  DIFFUSION_OWN_LORA_UNSUPPORTED: { code: 40050010, message: '当前的出图后端只能使用公共 LoRA，请换用公共 LoRA 或联系客服' },
  DIFFUSION_INSUFFICIENT_CASH: { code: 40011011, message: '现金余额不足以预扣本次生成的费用，请充值后再试（赠送金不能用于生成）' },
  TRAIN_INSUFFICIENT_CASH: { code: 40011010, message: '现金余额不足以预扣本次训练的预估费用，请充值后再试（赠送金不能用于训练）' },
  FILESTORE_UNAVAILABLE: { code: 40031004, message: '文件存储仅在本机实例（COMPUTE_DRIVER=local）上提供' },
  FILESTORE_QUOTA: { code: 40031001, message: '文件存储空间不足，请删除不需要的文件后再上传' },
  FILESTORE_EXISTS: { code: 40931001, message: '同名的文件或文件夹已存在，请换一个名称' },
  FILESTORE_NOT_A_FOLDER: { code: 40031002, message: '该路径不是文件夹' },
  FILESTORE_NOT_A_FILE: { code: 40031003, message: '该路径不是文件（文件夹不能直接下载）' },
  // The market on a real host (COMPUTE_DRIVER=local sells what the host has), codes 4xx32xxx.
  /** The host lacks what the product needs: the card model, the image (not built or not registered); the detail says which. */
  NOT_ON_THIS_HOST: { code: 40032001, message: '本主机没有该配置所需的显卡或镜像，暂不销售，请选择市场中在售的配置' },
  /** The host's cores or memory (times the operator's overcommit ratio) are held by the machines running now. */
  HOST_FULL: { code: 40932001, message: '本主机的 CPU 或内存已售完，请稍后再试或选择更小的配置' },
  // Notices: "有卡时通知我" subscriptions, codes 4xx28xxx.
  GPU_SUBSCRIPTION_LIMIT: { code: 40028001, message: '「有卡时通知我」最多同时订阅 20 个，请先在消息中心的「有卡提醒」中取消不需要的订阅' },
  // The model service: API keys, codes 4xx40xxx.
  API_KEY_LIMIT: { code: 40040001, message: '每个账号最多 50 个 API 密钥，请先删除不再使用的密钥' },
  MODEL_UNKNOWN: { code: 40040002, message: '模型不存在或已下架，请在模型广场中选择' },
  API_KEY_EXPIRY_PAST: { code: 40040003, message: '过期时间须晚于当前时间，请重新选择' },
  CONVERSATION_LIMIT: { code: 40040004, message: '最多保存 100 个会话，请先删除不再需要的会话' },
  // The operator's models and channels (/operator 「模型渠道」), codes 4xx41xxx.
  MODEL_CHANNEL_MODEL_UNKNOWN: { code: 40041001, message: '渠道中有模型不在模型列表中，请从模型列表中选择' },
  MODEL_CHANNEL_INVALID: { code: 40041002, message: '渠道配置不完整或有误，请按提示修改后再保存' },
  MODEL_CHANNEL_NOT_FOUND: { code: 40441001, message: '模型渠道不存在或已删除，请刷新列表' },
  MODEL_ENTRY_NOT_FOUND: { code: 40441002, message: '模型不存在，请刷新模型列表' },
  // Invoices
  // The operator's registered images (镜像登记), codes 4xx33xxx.
  OPERATOR_IMAGE_MISSING: { code: 40033001, message: '找不到该镜像：请先把它推送到镜像仓库（未配置 REGISTRY_URL 时导入本机镜像目录），核对地址与标签后再登记' },
  OPERATOR_IMAGE_OTHER_REGISTRY: {
    code: 40033002,
    message: '该镜像不在本平台的镜像仓库（REGISTRY_URL）中：请先推送到该仓库，或只填写仓库内的名称（如 ns/name:tag）',
  },
  OPERATOR_IMAGE_TAKEN: { code: 40933001, message: '该镜像地址或名称已登记，无需重复登记；如需修改请先移除原登记' },
  OPERATOR_IMAGE_IN_USE: { code: 40933002, message: '有实例正在使用该镜像，请待这些实例释放后再移除' },
  OPERATOR_IMAGE_NOT_FOUND: { code: 40433001, message: '该镜像登记不存在或已移除，请刷新列表' },
  REGISTRY_UNAVAILABLE: { code: 50233001, message: '暂时无法访问镜像仓库：请检查 REGISTRY_URL、REGISTRY_USER / REGISTRY_PASSWORD 与网络后重试' },
  INVOICE_AMOUNT_EXCEEDED: { code: 40022001, message: '开票金额超过可开票金额' },
  INVOICE_STATE_INVALID: { code: 40922001, message: '该发票申请已处理，不能再进行此操作，请刷新后查看' },
  // Accounts: certification, student verification, child accounts, reviews
  CERT_STATE_INVALID: { code: 40030001, message: '认证当前状态不能进行此操作' },
  CERT_NOT_SUBMITTED: { code: 40030002, message: '请先提交认证信息，再确认认证' },
  CERT_PENDING: { code: 40030003, message: '认证正在审核中，请等待结果后再操作' },
  CERT_ALREADY_DONE: { code: 40030004, message: '已完成该认证，无需重复认证' },
  CERT_LICENCE_MISSING: { code: 40030005, message: '请先上传营业执照照片' },
  CERT_IDENTITY_REJECTED: { code: 40030006, message: '实名核验未通过：姓名与身份证号不一致' },
  STUDENT_IMAGE_MISSING: { code: 40030007, message: '请先上传学生证照片' },
  STUDENT_ALREADY_VERIFIED: { code: 40030008, message: '已通过学生认证，无需重复认证' },
  STUDENT_GRADUATED: { code: 40030009, message: '毕业年份已过，不能申请学生认证' },
  CHILD_NAME_TAKEN: { code: 40930101, message: '该子账号名已存在，请换一个' },
  CHILD_LIMIT: { code: 40030010, message: '子账号数量已达上限' },
  MAIN_ACCOUNT_ONLY: { code: 40300005, message: '子账号不能进行此操作，请使用主账号' },
  /** A child's mobile, e-mail and password are its parent's to manage (security finding 5 of the accounts issue). */
  CHILD_CREDENTIALS_BY_PARENT: { code: 40300006, message: '子账号的手机号、邮箱和登录密码由主账号管理，需要改密码请联系主账号重设' },
  OWN_APPLICATION: { code: 40300007, message: '不能审核自己的申请，请由其他运营人员审核' },
  REVIEW_DONE: { code: 40930102, message: '该申请已处理，请刷新后查看' },
  /** A child without the 财务 permission asked for its parent's money: balance, recharges, statement, gift credit, invoices. */
  FINANCE_PERMISSION_REQUIRED: {
    code: 40330101,
    message: '子账号没有财务权限，不能查看主账号的余额、充值记录和收支明细；如需查看请联系主账号开通「财务」权限',
  },
  /** A child's spending limit (set by its parent) would be passed: the detail says the limit, what is spent and what is left. */
  SPEND_LIMIT_EXCEEDED: { code: 40330102, message: '子账号消费已达额度上限，请联系主账号提高额度' },
  MONEY_REQUEST_SELF_APPROVAL: { code: 40332001, message: '不能审批自己发起的资金申请，请由另一位运营人员审批' },
  OPERATOR_SELF_REVOKE: { code: 40332002, message: '不能收回自己的管理员角色，请由另一位管理员操作' },
  UPLOAD_TOO_LARGE: { code: 41300002, message: '图片过大，请压缩后重新上传' },
  // Codes the web client ignores silently (spec §8).
  DUPLICATE_SUBMIT: { code: 40016010, message: '请求正在处理中，请勿重复提交' },
  SILENT_RETRY: { code: 40016900, message: '请求已忽略' },
  SILENT_CANCELLED: { code: 40016901, message: '请求已取消' },
  // 401 — session
  UNAUTHENTICATED: { code: 40100001, message: '请先登录' },
  TOKEN_INVALID: { code: 40100002, message: '登录状态无效，请重新登录' },
  SESSION_EXPIRED: { code: 40100003, message: '登录已过期，请重新登录' },
  SESSION_REVOKED: { code: 40100004, message: '登录已失效（已退出或修改了密码），请重新登录' },
  APP_TOKEN_INVALID: { code: 40129001, message: 'API 令牌无效或已吊销：请在控制台实例的登录信息中查看当前令牌' },
  // 403 — not allowed
  CSRF_HEADER_REQUIRED: { code: 40300001, message: '请求缺少身份令牌头，已拒绝（防跨站请求）' },
  PERMISSION_DENIED: { code: 40300002, message: '当前账号没有此操作的权限，请联系主账号开通' },
  ACCOUNT_DISABLED: { code: 40300003, message: '账号已被停用，请联系客服' },
  DEV_ONLY: { code: 40300004, message: '该接口仅在内置短信/邮件驱动下可用' },
  CERTIFICATION_REQUIRED: { code: 40311001, message: '请先完成实名认证' },
  IMAGE_READ_ONLY: { code: 40321001, message: '这是他人共享给你的镜像，只能用于创建实例，不能修改、删除或再分享' },
  // 404
  NOT_FOUND: { code: 40400001, message: '请求的接口不存在' },
  USER_NOT_FOUND: { code: 40400002, message: '用户不存在' },
  FILE_NOT_FOUND: { code: 40400003, message: '文件不存在' },
  RECORD_NOT_FOUND: { code: 40400004, message: '记录不存在或无权查看' },
  IMAGE_NOT_FOUND: { code: 40421001, message: '镜像不存在或已删除' },
  IMAGE_NOT_SHARED: { code: 40421002, message: '该镜像不存在、已删除或已取消分享' },
  IMAGE_SHARE_CODE_INVALID: { code: 40421003, message: '共享码不存在或已被分享者撤销，请核对后重新输入，或向分享者索取新的共享码' },
  API_KEY_NOT_FOUND: { code: 40440001, message: 'API 密钥不存在或已删除，请刷新列表' },
  CONVERSATION_NOT_FOUND: { code: 40440005, message: '会话不存在或已删除，请刷新后重试' },
  // 409 — conflicts
  MOBILE_TAKEN: { code: 40900001, message: '该手机号已注册，请直接登录' },
  EMAIL_TAKEN: { code: 40900002, message: '该邮箱已被其他账号绑定' },
  IDEMPOTENCY_CONFLICT: { code: 40911001, message: '重复的业务编号，且内容与之前不一致' },
  PAY_TRADE_EXPIRED: { code: 40930001, message: '该交易已超时关闭，请返回控制台重新下单' },
  PAY_TRADE_CLOSED: { code: 40930002, message: '该交易已关闭，无法继续支付' },
  PAY_TRADE_PAID: { code: 40930003, message: '该交易已支付，请勿重复支付' },
  MONEY_REQUEST_DECIDED: { code: 40932501, message: '该资金申请已处理，请刷新列表' },
  IMAGE_NAME_TAKEN: { code: 40921001, message: '已有同名镜像，请换一个名称' },
  IMAGE_IN_USE: { code: 40921002, message: '有实例正在用该镜像创建，请等实例创建完成后再删除' },
  NO_CAPACITY: { code: 40920001, message: '所选配置暂无空闲资源，请更换地区、主机或减少数量' },
  // 413 / 415
  PAYLOAD_TOO_LARGE: { code: 41300001, message: '上传内容过大' },
  UNSUPPORTED_MEDIA: { code: 41500001, message: '不支持的请求内容类型' },
  // 429 — rate limits
  CODE_TOO_FREQUENT: { code: 42900001, message: '验证码发送过于频繁，请 60 秒后再试' },
  CODE_IP_LIMIT: { code: 42900002, message: '当前网络请求验证码次数过多，请稍后再试' },
  LOGIN_TOO_MANY: { code: 42900003, message: '登录失败次数过多，请 15 分钟后再试或使用验证码登录' },
  LOGIN_IP_TOO_MANY: { code: 42900004, message: '当前网络登录失败次数过多，请 15 分钟后再试或使用验证码登录' },
  // 5xx
  INTERNAL: { code: 50000001, message: '服务器开了个小差，请稍后重试' },
  UPSTREAM_FAILED: { code: 50200001, message: '服务器开了个小差，请稍后重试' },
  SMS_SEND_FAILED: { code: 50200002, message: '验证码发送失败，请稍后重试' },
  /** The object store (STORAGE_DRIVER=s3) refused or did not answer; `detail` says what it answered. */
  STORAGE_UNAVAILABLE: { code: 50200003, message: '文件服务暂时不可用，请稍后重试' },
  /** More password checks waiting than the server takes on (users/passwords.ts): retrying a moment later works. */
  AUTH_BUSY: { code: 50300001, message: '当前登录和注册的人较多，请几秒后再试' },
} as const satisfies Record<string, { code: number; message: string }>;

export type ErrorName = keyof typeof ERRORS;
export type ErrorCode = (typeof ERRORS)[ErrorName]['code'];

/** The HTTP status a business code travels with: its first three digits. */
export function httpStatusOf(code: number): number {
  return Math.floor(code / 100000);
}

/** Codes the web client swallows without a message (spec §8). */
export const SILENT_CODES: readonly number[] = [ERRORS.DUPLICATE_SUBMIT.code, ERRORS.SILENT_RETRY.code, ERRORS.SILENT_CANCELLED.code];

/** The body of every failed API response. */
export interface ErrorBody {
  code: number;
  message: string;
  detail?: string;
}

const byCode = new Map<number, { name: ErrorName; message: string }>(
  (Object.keys(ERRORS) as ErrorName[]).map((name) => [ERRORS[name].code, { name, message: ERRORS[name].message }]),
);

export function errorByCode(code: number) {
  return byCode.get(code);
}
