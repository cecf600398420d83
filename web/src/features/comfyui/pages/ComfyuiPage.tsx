import { Alert, App, Col, Flex, Row } from 'antd';
import { Link } from 'react-router';
import { COMFY_NODES, DIFFUSION_GPU, PAGE, type ComfyWorkflow, type DiffusionTask } from '@console/contract';
import { PageFrame } from '../../../components/PageFrame';
import { SimulatedNotice } from '../../../components/Simulated';
import { useUrlState } from '../../../routing/useUrlState';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { RUN_PAGE_SIZES } from '../api/comfyui';
import { ComfyInstances } from '../components/ComfyInstances';
import { WorkflowEditor } from '../components/WorkflowEditor';
import { WorkflowList } from '../components/WorkflowList';
import { WorkflowRuns } from '../components/WorkflowRuns';

/** The workflow open in the editor, kept in the URL (?workflow=<id>) so a reload or a shared link opens it again. */
function useOpenWorkflow() {
  const url = useUrlState(
    (p) => p.get('workflow'),
    (id: string | null, current) => {
      if (id) current.set('workflow', id);
      else current.delete('workflow');
      return current;
    },
  );
  return { id: url.value, open: (id: string) => url.set(id), close: () => url.set(null) };
}

const SUPPORTED = Object.values(COMFY_NODES)
  .map((n) => n.title)
  .join('、');
/** Where a ComfyUI of one's own is bought: the purchase page with the application and the card preset. */
const OWN_COMFYUI = `${PAGE.purchase}?${new URLSearchParams({ applicationId: 'comfyui', gpuTypeId: DIFFUSION_GPU })}`;

/**
 * /comfyui — ComfyUI 工作流: the account's workflows in ComfyUI's API format, run on the shared image
 * backend and paid per picture like 生图. On the left the list, or the workflow open for editing; on
 * the right the runs, followed node by node while they run; their pictures go to the gallery.
 */
export default function ComfyuiPage() {
  const { message } = App.useApp();
  const workflow = useOpenWorkflow();
  const runs = useUrlPaging({ key: 'runs', sizes: RUN_PAGE_SIZES });

  const started = (task: DiffusionTask, w: ComfyWorkflow) => {
    void message.success(`已开始运行「${w.name}」（输出 ${task.batchCount} 张），进度见右侧运行记录`);
    if (runs.paging.page !== 1) runs.set({ ...runs.paging, page: 1 });
  };

  return (
    <PageFrame title="ComfyUI 工作流">
      <Flex vertical gap={16}>
        <Alert
          type="info"
          showIcon
          title="在共享 GPU 上运行 ComfyUI 工作流，无需开机、按张计费"
          description={
            <>
              <div>
                导入在 ComfyUI 中用 “Save (API Format)” 导出的 JSON，或从默认的文生图工作流开始，在这里修改节点参数后运行。按输出的图片张数计费（每张的 GPU 时长
                × 单价）：RTX 4090 时长包先抵扣整张，其余从现金余额预扣（赠送金不能用于生成），每生成一张结算一张，取消或失败时未生成部分退回。
              </div>
              <div>
                支持的节点：{SUPPORTED}。需要自定义节点或插件？<Link to={OWN_COMFYUI}>租用独享的 ComfyUI 实例</Link>
              </div>
            </>
          }
        />
        <SimulatedNotice service="images" />
        <ComfyInstances />
        <Row gutter={[16, 16]}>
          <Col xs={24} xl={workflow.id ? 15 : 14}>
            {workflow.id ? (
              <WorkflowEditor id={workflow.id} onClose={workflow.close} onStarted={started} />
            ) : (
              <WorkflowList onOpen={workflow.open} onDeleted={(id) => id === workflow.id && workflow.close()} />
            )}
          </Col>
          <Col xs={24} xl={workflow.id ? 9 : 10}>
            <WorkflowRuns paging={runs.paging} onPage={runs.set} />
          </Col>
        </Row>
      </Flex>
    </PageFrame>
  );
}
