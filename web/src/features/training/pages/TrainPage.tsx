import { Alert, App, Flex } from 'antd';
import { LORA_MAX_ACTIVE_JOBS } from '@console/contract';
import { PageFrame } from '../../../components/PageFrame';
import { SimulatedNotice } from '../../../components/Simulated';
import { useUrlState } from '../../../routing/useUrlState';
import { TrainForm } from '../components/TrainForm';
import { TrainJobDrawer } from '../components/TrainJobDrawer';
import { TrainJobs } from '../components/TrainJobs';

/** The job whose detail is open, kept in the URL (?job=<id>) so a reload or a shared link opens it again. */
function useOpenJob() {
  const url = useUrlState(
    (p) => p.get('job'),
    (id: string | null, current) => {
      if (id) current.set('job', id);
      else current.delete('job');
      return current;
    },
  );
  return { id: url.value, open: (id: string) => url.set(id), close: () => url.set(null) };
}

/**
 * /sd/train — LoRA 训练: pick a dataset and a base model, adjust the sd-scripts parameters (preset by the
 * dataset's type), see the steps, time and price, and start; the estimate is held from the cash and
 * settled per finished epoch. Below, the jobs; a job's detail follows it live while it runs.
 */
export default function TrainPage() {
  const { message } = App.useApp();
  const job = useOpenJob();
  return (
    <PageFrame>
      <Flex vertical gap={16}>
        <Alert
          type="info"
          showIcon
          title="用自己的数据集训练 LoRA 模型"
          description={`按 GPU 时长计费：开始时从现金余额预扣预估费用（赠送金不能用于训练），每完成一轮结算该轮的份额；中途取消时已完成轮次照常结算，其余退回；训练失败全部退回。同时进行的任务最多 ${LORA_MAX_ACTIVE_JOBS} 个。`}
        />
        <SimulatedNotice service="training" />
        <TrainForm
          onStarted={(j) => {
            void message.success(`训练任务「${j.name}」已开始`);
            job.open(j.id);
          }}
        />
        <TrainJobs open={job.open} onDeleted={(id) => id === job.id && job.close()} />
      </Flex>
      <TrainJobDrawer id={job.id} onClose={job.close} />
    </PageFrame>
  );
}
