import { Alert, Button, Skeleton, Tag, Typography } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import { isCpuApplication, type Application } from '@console/contract';
import { AppCover } from './AppCover';
import type { PurchaseCategory } from '../utils/purchaseQuery';

/**
 * The application a purchase deploys, in place of the image choice. An application runs either on a
 * GPU or, needing no card, on a CPU size: on the other kind's page it says so and offers the switch
 * (an old link, or the buyer changed the product).
 */
export function ApplicationChoice({
  app,
  query,
  category,
  onChangeApp,
  onCategory,
}: {
  app: Application | undefined;
  query: UseQueryResult<unknown>;
  category: PurchaseCategory;
  onChangeApp: () => void;
  onCategory: (category: PurchaseCategory) => void;
}) {
  if (query.isPending) return <Skeleton.Input active />;
  if (!app)
    return (
      <Alert
        type="warning"
        showIcon
        title="所选应用不存在或已下架"
        action={
          <Button size="small" onClick={onChangeApp}>
            改选镜像
          </Button>
        }
      />
    );
  const cpu = isCpuApplication(app);
  const wrongKind = cpu ? category !== 'Generic' : category !== 'Gpu';
  return (
    <>
      <div className="app-choice">
        <div className="app-choice-cover">
          <AppCover src={app.cover} name={app.name} />
        </div>
        <div style={{ flex: 1, minWidth: 0 }}>
          <Typography.Text strong>{app.name}</Typography.Text>
          <Tag color="purple" style={{ marginLeft: 8 }}>
            {app.category}
          </Tag>
          <Typography.Paragraph type="secondary" ellipsis={{ rows: 2 }} style={{ margin: '4px 0 0', fontSize: 12 }}>
            {app.description}（{cpu ? '无需 GPU，按所选 CPU 规格计费，' : `显存 ≥ ${app.minGpuMemoryGb} GB，`}默认端口 {app.defaultPort}）
          </Typography.Paragraph>
        </div>
        <Button onClick={onChangeApp}>更换</Button>
      </div>
      {wrongKind && (
        <Alert
          style={{ marginTop: 8 }}
          type="warning"
          showIcon
          title={cpu ? '该应用不使用 GPU，只能部署在 CPU 实例规格上' : `该应用需要显存 ≥ ${app.minGpuMemoryGb} GB 的 GPU`}
          action={
            <Button size="small" type="primary" onClick={() => onCategory(cpu ? 'Generic' : 'Gpu')}>
              {cpu ? '改用 CPU 规格' : '改用 GPU'}
            </Button>
          }
        />
      )}
    </>
  );
}
