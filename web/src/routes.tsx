import type { ComponentType } from 'react';
import { matchPath, redirect, type LoaderFunctionArgs, type RouteObject } from 'react-router';
import { PAGE } from '@console/contract';
import type { RouteMeta } from './auth/guard';
import { makeGuardLoader } from './auth/guardLoader';
import { PERMS } from './auth/permissions';
import { PageLoading } from './components/PageLoading';
import { lazyComponent } from './routing/lazyComponent';
import { RootShell } from './routing/RootShell';
import { RouteError } from './routing/RouteError';

/**
 * The route table of spec §2 in one place. Every page is its own chunk, loaded on demand;
 * `requireAuth` and `perms` (spec §6, any-of) are read by the guard of auth/guard.ts.
 */
type Layout = 'public' | 'console' | 'tool' | 'none';
type PageModule = { default: ComponentType };

interface PageDef extends RouteMeta {
  path: string;
  title: string;
  layout: Layout;
  page: () => Promise<PageModule>;
}

const auth = { requireAuth: true } as const;

export const PAGES: PageDef[] = [
  // Public
  { path: PAGE.login, title: '登录', layout: 'none', page: () => import('./features/auth/pages/AuthPage') },
  { path: PAGE.register, title: '注册', layout: 'none', page: () => import('./features/auth/pages/AuthPage') },
  { path: PAGE.resetPassword, title: '找回密码', layout: 'none', page: () => import('./features/auth/pages/AuthPage') },
  { path: PAGE.agreementUser, title: '用户协议', layout: 'public', page: () => import('./features/site/pages/AgreementPage') },
  { path: PAGE.agreementPrivacy, title: '隐私政策', layout: 'public', page: () => import('./features/site/pages/AgreementPage') },
  { path: PAGE.upyunLogin, title: '第三方登录', layout: 'none', page: () => import('./features/auth/pages/UpyunLoginPage') },
  { path: PAGE.enterprise, title: '企业服务', layout: 'public', page: () => import('./features/market/pages/EnterprisePage') },
  { path: PAGE.cloudGpu, title: 'GPU 云', layout: 'public', perms: PERMS.cloudGpu, page: () => import('./features/market/pages/GpuCloudPage') },
  { path: PAGE.cloudApply, title: '镜像应用', layout: 'public', perms: PERMS.cloudApply, page: () => import('./features/market/pages/ApplyPage') },
  { path: PAGE.purchase, title: '购买', layout: 'public', perms: PERMS.purchase, page: () => import('./features/market/pages/PurchasePage') },
  { path: PAGE.statsGame, title: '云游戏', layout: 'public', page: () => import('./features/market/pages/GamePage') },
  { path: PAGE.gpudata, title: '数据存储', layout: 'public', page: () => import('./features/market/pages/GpuDataPage') },
  { path: PAGE.apparatus, title: '算力设备', layout: 'public', page: () => import('./features/market/pages/ApparatusPage') },
  { path: PAGE.imageShare, title: '镜像分享', layout: 'public', ...auth, page: () => import('./features/storage/pages/ImageSharePage') },

  // Full-screen tools
  { path: PAGE.comfyui, title: '工作流', layout: 'tool', ...auth, perms: PERMS.sd, page: () => import('./features/comfyui/pages/ComfyuiPage') },
  { path: PAGE.rdp, title: '远程桌面', layout: 'tool', ...auth, perms: PERMS.instanceDetail, page: () => import('./features/desktops/pages/RdpPage') },
  {
    path: PAGE.freeDesktop,
    title: '免费云桌面',
    layout: 'none',
    ...auth,
    perms: PERMS.instanceDetail,
    page: () => import('./features/desktops/pages/FreeDesktopPage'),
  },
  { path: PAGE.finance, title: '财务', layout: 'tool', ...auth, perms: PERMS.finance, page: () => import('./features/billing/pages/FinancePage') },

  // Console
  { path: PAGE.consolePersonal, mainOnly: true, title: '个人中心', layout: 'console', ...auth, page: () => import('./features/account/pages/PersonalPage') },
  {
    path: PAGE.consoleEnterprise,
    mainOnly: true,
    title: '企业中心',
    layout: 'console',
    ...auth,
    page: () => import('./features/account/pages/EnterprisePage'),
  },
  {
    path: PAGE.ipvmDetail,
    title: '实例详情',
    layout: 'console',
    ...auth,
    perms: PERMS.instanceDetail,
    page: () => import('./features/instances/pages/IpvmDetailPage'),
  },
  { path: PAGE.recharge, title: '充值', layout: 'console', ...auth, perms: PERMS.finance, page: () => import('./features/billing/pages/RechargePage') },
  {
    path: PAGE.gpuGeneric,
    title: 'GPU 实例',
    layout: 'console',
    ...auth,
    perms: PERMS.gpuGeneric,
    page: () => import('./features/instances/pages/GpuGenericPage'),
  },
  { path: PAGE.app, title: '镜像应用', layout: 'console', ...auth, perms: PERMS.app, page: () => import('./features/instances/pages/AppPage') },
  { path: PAGE.gpudataMirror, title: '我的镜像', layout: 'console', ...auth, perms: PERMS.data, page: () => import('./features/storage/pages/DataMirrorPage') },
  { path: PAGE.gpudataDisk, title: '数据盘', layout: 'console', ...auth, perms: PERMS.data, page: () => import('./features/storage/pages/DataDiskPage') },
  { path: PAGE.gpudataFiles, title: '文件存储', layout: 'console', ...auth, perms: PERMS.data, page: () => import('./features/storage/pages/DataFilesPage') },
  { path: PAGE.cpu, mainOnly: true, title: 'CPU 实例', layout: 'console', ...auth, page: () => import('./features/instances/pages/CpuPage') },
  { path: PAGE.desktop, mainOnly: true, title: '云桌面', layout: 'console', ...auth, page: () => import('./features/instances/pages/DesktopPage') },
  { path: PAGE.ebusiness, mainOnly: true, title: '跨境电商', layout: 'console', ...auth, page: () => import('./features/instances/pages/EbusinessPage') },
  { path: PAGE.game, mainOnly: true, title: '云游戏', layout: 'console', ...auth, page: () => import('./features/instances/pages/GamePage') },
  { path: PAGE.log, title: '操作日志', layout: 'console', ...auth, page: () => import('./features/instances/pages/LogPage') },
  { path: PAGE.message, title: '消息中心', layout: 'console', ...auth, page: () => import('./features/account/pages/MessagePage') },
  { path: PAGE.account, title: '账号中心', layout: 'console', ...auth, page: () => import('./features/account/pages/AccountPage') },
  { path: PAGE.operator, title: '运营管理', layout: 'console', ...auth, requireOperator: true, page: () => import('./features/operator/pages/OperatorPage') },

  // Cost center
  { path: PAGE.balance, title: '我的余额', layout: 'console', ...auth, perms: PERMS.finance, page: () => import('./features/billing/pages/BalancePage') },
  { path: PAGE.bill, title: '账单', layout: 'console', ...auth, page: () => import('./features/billing/pages/BillPage') },
  { path: PAGE.serverBillDetail, title: '服务器账单详情', layout: 'console', ...auth, page: () => import('./features/billing/pages/ServerBillDetailPage') },
  { path: PAGE.storageBillDetail, title: '存储账单详情', layout: 'console', ...auth, page: () => import('./features/billing/pages/StorageBillDetailPage') },
  { path: PAGE.modelBillDetail, title: '模型账单详情', layout: 'console', ...auth, page: () => import('./features/billing/pages/ModelBillDetailPage') },
  { path: PAGE.coupon, title: '卡券包', layout: 'console', ...auth, page: () => import('./features/billing/pages/CouponPage') },
  { path: PAGE.deposit, title: '押金', layout: 'console', ...auth, perms: PERMS.finance, page: () => import('./features/billing/pages/DepositPage') },
  { path: PAGE.resource, title: '资源包', layout: 'console', ...auth, page: () => import('./features/billing/pages/ResourcePage') },

  // LoRA / SD and compute center
  { path: PAGE.sdTrain, title: 'LoRA 训练', layout: 'console', ...auth, perms: PERMS.sd, page: () => import('./features/training/pages/TrainPage') },
  { path: PAGE.sdDiffusion, title: 'LoRA 生图', layout: 'console', ...auth, perms: PERMS.sd, page: () => import('./features/diffusion/pages/DiffusionPage') },
  { path: PAGE.sdDataset, title: '数据集', layout: 'console', ...auth, perms: PERMS.sd, page: () => import('./features/datasets/pages/DatasetPage') },
  {
    path: PAGE.sdDatasetCreate,
    title: '创建数据集',
    layout: 'console',
    ...auth,
    perms: PERMS.sd,
    requireCert: true,
    page: () => import('./features/datasets/pages/DatasetCreatePage'),
  },
  {
    path: PAGE.sdDatasetDetail,
    title: '数据集详情',
    layout: 'console',
    ...auth,
    perms: PERMS.sd,
    page: () => import('./features/datasets/pages/DatasetDetailPage'),
  },
  {
    path: PAGE.sdDatasetUpload,
    title: '上传图片',
    layout: 'console',
    ...auth,
    perms: PERMS.sd,
    page: () => import('./features/datasets/pages/DatasetUploadPage'),
  },
  { path: PAGE.computeCenter, title: '算力中心', layout: 'console', ...auth, page: () => import('./features/compute/pages/ComputeCenterPage') },
  { path: PAGE.computeDetail, title: '算力详情', layout: 'console', ...auth, page: () => import('./features/compute/pages/ComputeDetailPage') },

  // Model service
  { path: PAGE.modelSquare, title: '模型广场', layout: 'console', ...auth, perms: PERMS.model, page: () => import('./features/model/pages/SquarePage') },
  {
    path: PAGE.modelExperience,
    title: '在线体验',
    layout: 'console',
    ...auth,
    perms: PERMS.model,
    page: () => import('./features/model/pages/ExperiencePage'),
  },
  { path: PAGE.modelStats, title: '用量统计', layout: 'console', ...auth, perms: PERMS.model, page: () => import('./features/model/pages/StatsPage') },
  { path: PAGE.modelKey, title: 'API KEY', layout: 'console', ...auth, perms: PERMS.model, page: () => import('./features/model/pages/KeyPage') },
];

/** Paths that only forward (spec §2); the query string travels along (e.g. ?token=). */
export const REDIRECTS: Record<string, string> = {
  [PAGE.root]: PAGE.cloudGpu,
  [PAGE.stats]: PAGE.cloudGpu,
  [PAGE.cloud]: PAGE.cloudGpu,
  '/console': PAGE.gpuGeneric,
  [PAGE.consoleBase]: PAGE.gpuGeneric,
  '/console/gpudata': PAGE.gpudataMirror,
  [PAGE.generic]: PAGE.cpu,
  '/center': PAGE.cost,
  [PAGE.center]: PAGE.cost,
  [PAGE.cost]: PAGE.balance,
  '/console/cost': PAGE.balance,
  [PAGE.sd]: PAGE.sdTrain,
  '/compute': PAGE.computeCenter,
  [PAGE.model]: PAGE.modelSquare,
};

/** The guard's view of a path: the meta of the page it opens (nothing for unknown paths). */
export function metaFor(pathname: string): RouteMeta {
  const page = PAGES.find((p) => matchPath({ path: p.path, end: true }, pathname));
  return page
    ? {
        title: page.title,
        requireAuth: page.requireAuth,
        perms: page.perms,
        requireCert: page.requireCert,
        mainOnly: page.mainOnly,
        requireOperator: page.requireOperator,
      }
    : {};
}

const guardLoader = makeGuardLoader(metaFor);

const LAYOUTS: Record<Exclude<Layout, 'none'>, () => Promise<PageModule>> = {
  public: () => import('./layouts/PublicLayout'),
  console: () => import('./layouts/ConsoleLayout'),
  tool: () => import('./layouts/ToolLayout'),
};

function pageRoute(def: PageDef): RouteObject {
  return {
    path: def.path,
    loader: guardLoader,
    handle: { title: def.title },
    // Per page, so a failing page keeps its layout around the error.
    ErrorBoundary: RouteError,
    lazy: lazyComponent(def.page, { isPage: true }),
  };
}

function forward(to: string) {
  return ({ request }: LoaderFunctionArgs) => redirect(to + new URL(request.url).search);
}

/**
 * A fresh route tree for one router. A factory, not a constant: the router consumes the `lazy`
 * objects as they load, so two routers (tests, HMR) must not share them.
 */
export function createRoutes(): RouteObject[] {
  return [
    {
      id: 'root',
      Component: RootShell,
      ErrorBoundary: RouteError,
      HydrateFallback: PageLoading,
      children: [
        // element: null — these never render; their loader always redirects.
        ...Object.entries(REDIRECTS).map(([path, to]) => ({ path, loader: forward(to), element: null })),
        ...PAGES.filter((p) => p.layout === 'none').map(pageRoute),
        ...(Object.keys(LAYOUTS) as (keyof typeof LAYOUTS)[]).map((layout) => ({
          id: `layout-${layout}`,
          ErrorBoundary: RouteError,
          lazy: lazyComponent(LAYOUTS[layout], { isPage: false }),
          children: PAGES.filter((p) => p.layout === layout).map(pageRoute),
        })),
        // Spec §2: any unknown path goes to the root.
        { path: '*', loader: () => redirect(PAGE.root), element: null },
      ],
    },
  ];
}
