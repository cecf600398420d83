/**
 * The embedded image backend paints colour blobs and the embedded trainer makes stand-in LoRAs: what
 * they make is labelled 模拟 wherever it is shown, with a line on connecting the real service, so
 * nobody takes a demonstration for a model's work. The server says which services are embedded
 * (site settings); while that is unknown nothing is labelled.
 */
import type { ReactNode } from 'react';
import { Alert, Tooltip } from 'antd';
import { useQuery } from '@tanstack/react-query';
import { siteQueries } from '../api/site';

export type SimulatedService = 'images' | 'training';

export function useSimulated(service: SimulatedService): boolean {
  return useQuery(siteQueries.settings()).data?.simulated?.[service] === true;
}

const MARK_TIP: Record<SimulatedService, string> = {
  images: '内置模拟后端按参数画出的示意图，并非真实模型生成',
  training: '内置模拟训练器生成的示意样图，并非真实训练结果',
};

/** An output (an image, a sample) with a 模拟 mark in its corner when its service is embedded. */
export function SimulatedMark({ service, block, children }: { service: SimulatedService; block?: boolean; children: ReactNode }) {
  const simulated = useSimulated(service);
  if (!simulated) return <>{children}</>;
  return (
    <span className="simulated-output" style={block ? { display: 'block' } : undefined}>
      {children}
      <Tooltip title={MARK_TIP[service]}>
        <span className="simulated-mark">模拟</span>
      </Tooltip>
    </span>
  );
}

const NOTICE: Record<SimulatedService, { title: string; how: string }> = {
  images: {
    title: '当前为模拟出图：图片由内置模拟后端按参数画出（示意色块），并非真实模型生成，均标有「模拟」。',
    how: '运营方在服务器配置 COMFYUI_URL（一台 ComfyUI 服务的地址）后，txt2img 任务和工作流即由真实的 ComfyUI 出图，详见 README。',
  },
  training: {
    title: '当前为模拟训练：损失曲线、样图和 LoRA 文件由内置模拟训练器生成，并非真实训练结果，样图标有「模拟」。',
    how: '运营方在服务器配置 TRAINER_DRIVER=kohya（kohya sd-scripts，见 README）后即为真实训练。',
  },
};

/** The page's line saying its outputs are simulated and how a real backend is connected. */
export function SimulatedNotice({ service }: { service: SimulatedService }) {
  if (!useSimulated(service)) return null;
  const { title, how } = NOTICE[service];
  return <Alert type="warning" showIcon title={title} description={how} data-testid={`simulated-${service}`} />;
}
