import { useRef } from 'react';
import { Alert, App, Col, Flex, Row } from 'antd';
import { DIFFUSION_MAX_ACTIVE, type DiffusionImage, type DiffusionTask } from '@console/contract';
import { useDiffusionTasks, useLoraOptions } from '../api/diffusion';
import { PageFrame } from '../../../components/PageFrame';
import { SimulatedNotice } from '../../../components/Simulated';
import { DiffusionForm, useDiffusionDraft } from '../components/DiffusionForm';
import { DiffusionGallery } from '../components/DiffusionGallery';
import { DiffusionQueue } from '../components/DiffusionQueue';

/** The seed of the newest image made: the newest task (running or finished) with an image, its last one. */
function newestSeed(tasks: DiffusionTask[]): number | null {
  const withImages = tasks.filter((t) => t.images.length > 0).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const images = withImages[0]?.images ?? [];
  return images.length ? images.reduce((a, b) => (b.index > a.index ? b : a)).seed : null;
}

/**
 * /sd/diffusion — LoRA 生图, laid out like WebUI: on the left the parameters (prompt, base model, up to
 * five LoRAs, size, steps, CFG, sampler, seed, count) with the live price and 生成; on the right the
 * queue (polled while a task runs) and the gallery, whose 复用参数 puts an image's parameters back.
 */
export default function DiffusionPage() {
  const { message } = App.useApp();
  const loras = useLoraOptions();
  const form = useDiffusionDraft(loras.data?.items);
  const tasks = useDiffusionTasks();
  const formBox = useRef<HTMLDivElement>(null);
  const lastSeed = newestSeed([...(tasks.active.data?.items ?? []), ...(tasks.recent.data?.items ?? [])]);

  const reuse = (image: DiffusionImage) => {
    form.reuse(image);
    formBox.current?.scrollIntoView?.({ behavior: 'smooth', block: 'start' });
  };
  const submitted = (task: DiffusionTask) => void message.success(`已提交 ${task.batchCount} 张图片的生成任务，可在生成队列查看进度`);

  return (
    <PageFrame>
      <Flex vertical gap={16}>
        <Alert
          type="info"
          showIcon
          title="用训练好的 LoRA 或公共 LoRA 生成图片"
          description={`按张计费（每张的 GPU 时长 × 单价）：提交时先用 RTX 4090 时长包抵扣整张，其余张数的费用从现金余额预扣（赠送金不能用于生成），每生成一张结算一张；取消时已生成的照常结算，其余（含时长包）退回；生成失败退回未生成部分。同时进行的任务最多 ${DIFFUSION_MAX_ACTIVE} 个。`}
        />
        <SimulatedNotice service="images" />
        <Row gutter={[16, 16]}>
          <Col xs={24} xl={10} xxl={9}>
            <div ref={formBox} style={{ scrollMarginTop: 80 }}>
              <DiffusionForm form={form} loras={loras} lastSeed={lastSeed} onSubmitted={submitted} />
            </div>
          </Col>
          <Col xs={24} xl={14} xxl={15}>
            <Flex vertical gap={16}>
              <DiffusionQueue tasks={tasks} />
              <DiffusionGallery onReuse={reuse} />
            </Flex>
          </Col>
        </Row>
      </Flex>
    </PageFrame>
  );
}
