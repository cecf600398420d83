import type { ReactNode } from 'react';
import {
  AccountBookOutlined,
  AuditOutlined,
  ApiOutlined,
  AppstoreOutlined,
  CloudServerOutlined,
  DatabaseOutlined,
  DesktopOutlined,
  ExperimentOutlined,
  FileTextOutlined,
  RocketOutlined,
  ShopOutlined,
  ThunderboltOutlined,
  TrophyOutlined,
  UserOutlined,
} from '@ant-design/icons';
import type { MenuProps } from 'antd';
import { PAGE, type PermissionFlag } from '@console/contract';
import { isAllowed, PERMS, type SessionUser } from '../auth/permissions';

interface MenuNode {
  key: string;
  label: string;
  icon?: ReactNode;
  perms?: readonly PermissionFlag[];
  /** Hidden from child accounts (the route is mainOnly). */
  mainOnly?: boolean;
  /** Shown to operators only. */
  operator?: boolean;
  children?: MenuNode[];
}

/** The console areas; `perms` repeat the route table's so a child never sees a door it can't open. */
export const CONSOLE_MENU: MenuNode[] = [
  { key: PAGE.gpuGeneric, label: 'GPU 实例', icon: <ThunderboltOutlined />, perms: PERMS.gpuGeneric },
  { key: PAGE.app, label: '镜像应用', icon: <AppstoreOutlined />, perms: PERMS.app },
  {
    key: 'data',
    label: '我的数据',
    icon: <DatabaseOutlined />,
    perms: PERMS.data,
    children: [
      { key: PAGE.gpudataMirror, label: '我的镜像' },
      { key: PAGE.gpudataDisk, label: '数据盘' },
      { key: PAGE.gpudataFiles, label: '文件存储' },
    ],
  },
  { key: PAGE.cpu, label: 'CPU 实例', mainOnly: true, icon: <CloudServerOutlined /> },
  { key: PAGE.desktop, label: '云桌面', mainOnly: true, icon: <DesktopOutlined /> },
  { key: PAGE.ebusiness, label: '跨境电商', mainOnly: true, icon: <ShopOutlined /> },
  { key: PAGE.game, label: '云游戏', mainOnly: true, icon: <TrophyOutlined /> },
  { key: PAGE.log, label: '操作日志', icon: <FileTextOutlined /> },
  {
    key: 'cost',
    label: '费用中心',
    icon: <AccountBookOutlined />,
    children: [
      { key: PAGE.balance, label: '我的余额', perms: PERMS.finance },
      { key: PAGE.bill, label: '账单' },
      { key: PAGE.coupon, label: '卡券包' },
      { key: PAGE.deposit, label: '押金', perms: PERMS.finance },
      { key: PAGE.resource, label: '资源包' },
    ],
  },
  { key: PAGE.account, label: '账号中心', icon: <UserOutlined /> },
  { key: PAGE.operator, label: '运营管理', icon: <AuditOutlined />, operator: true },
  {
    key: 'sd',
    label: 'LoRA/SD',
    icon: <ExperimentOutlined />,
    children: [
      { key: PAGE.sdTrain, label: 'LoRA 训练' },
      { key: PAGE.sdDiffusion, label: 'LoRA 生图' },
      // A full-width tool of its own (no side menu there): 返回控制台 comes back.
      { key: PAGE.comfyui, label: 'ComfyUI 工作流' },
      { key: PAGE.sdDataset, label: '数据集' },
    ],
  },
  { key: PAGE.computeCenter, label: '算力中心', icon: <RocketOutlined /> },
  {
    key: 'model',
    label: '模型服务',
    icon: <ApiOutlined />,
    perms: PERMS.model,
    children: [
      { key: PAGE.modelSquare, label: '模型广场' },
      { key: PAGE.modelExperience, label: '在线体验' },
      { key: PAGE.modelStats, label: '用量统计' },
      { key: PAGE.modelKey, label: 'API KEY' },
    ],
  },
];

/** The menu as this account may see it. */
export function menuItemsFor(user: SessionUser | null, nodes: MenuNode[] = CONSOLE_MENU): MenuProps['items'] {
  return nodes
    .filter((n) => isAllowed(user, n.perms) && !(n.mainOnly && user?.isChild) && !(n.operator && !user?.isOperator))
    .map(({ key, label, icon, children }) => (children ? { key, label, icon, children: menuItemsFor(user, children) } : { key, label, icon }));
}

/** The leaf whose path is the longest prefix of `pathname` (detail pages light up their list). */
export function selectedKey(pathname: string, nodes: MenuNode[] = CONSOLE_MENU): string | undefined {
  const leaves = nodes.flatMap((n) => n.children ?? [n]);
  return leaves.filter((l) => pathname === l.key || pathname.startsWith(`${l.key}/`)).sort((a, b) => b.key.length - a.key.length)[0]?.key;
}

/** The group that holds the selected leaf, to open it. */
export function openKeyOf(leafKey: string | undefined, nodes: MenuNode[] = CONSOLE_MENU): string[] {
  const group = nodes.find((n) => n.children?.some((c) => c.key === leafKey));
  return group ? [group.key] : [];
}
