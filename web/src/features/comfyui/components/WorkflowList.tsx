/** 我的工作流: the saved workflows with 打开 / 重命名 / 导出 JSON / 删除, and 新建 / 导入 JSON. */
import { useState } from 'react';
import { Alert, App, Button, Card, Empty, Flex, Popconfirm, Space, Typography, Upload, type TableColumnsType } from 'antd';
import { FileAddOutlined, ImportOutlined } from '@ant-design/icons';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { analyzeComfyGraph, COMFY_MAX_WORKFLOWS, defaultComfyGraph, formatBeijing, type ComfyGraph, type ComfyWorkflow } from '@console/contract';
import { COMFY_KEYS, comfyApi, storeWorkflow } from '../api/comfyui';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { Note } from '../../diffusion';
import { downloadGraph, nameFromFile, parseGraphJson } from '../utils/workflowFile';
import { WorkflowNameModal, type NameRequest } from './WorkflowNameModal';

/** Why a file was not imported, with what to do instead. */
interface ImportProblem {
  file: string;
  title: string;
  detail: string;
}

/** The first few problems of a graph, and how many there are in all. */
function firstErrors(errors: { message: string }[], shown = 3): string {
  const text = errors
    .slice(0, shown)
    .map((e) => e.message)
    .join('；');
  return errors.length > shown ? `${text}……共 ${errors.length} 处问题，可在编辑器中逐个修改` : text;
}

/** What an imported file holds, said before it is saved: its nodes, and whether it can run as it is. */
function ImportSummary({ file, graph }: { file: string; graph: ComfyGraph }) {
  const analysis = analyzeComfyGraph(graph);
  return (
    <Alert
      type={analysis.ok ? 'success' : 'warning'}
      showIcon
      title={`「${file}」共 ${Object.keys(graph).length} 个节点`}
      description={analysis.ok ? `运行一次输出 ${analysis.plan.images.length} 张图片。` : `导入后需要先修改才能运行：${firstErrors(analysis.errors)}`}
    />
  );
}

/** 新建, 导入, 重命名 and 删除, with the dialog that asks for a name. */
function useWorkflowActions(onOpen: (id: string) => void, onDeleted: (id: string) => void) {
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [nameRequest, setNameRequest] = useState<NameRequest | null>(null);
  const [problem, setProblem] = useState<ImportProblem | null>(null);

  const create = (name: string, graph: ComfyGraph) =>
    comfyApi.create({ name, graph }).then((w) => {
      storeWorkflow(queryClient, w);
      void message.success(`已保存工作流「${w.name}」`);
      onOpen(w.id);
    });
  const remove = useMutation({
    mutationFn: (id: string) => comfyApi.remove(id),
    onSuccess: (_, id) => {
      onDeleted(id);
      queryClient.removeQueries({ queryKey: COMFY_KEYS.workflow(id) });
    },
    onSettled: () => void queryClient.invalidateQueries({ queryKey: COMFY_KEYS.workflows }),
  });

  return {
    nameRequest,
    closeName: () => setNameRequest(null),
    problem,
    clearProblem: () => setProblem(null),
    startNew: (suggested: string) =>
      setNameRequest({
        title: '新建工作流',
        okText: '创建并编辑',
        initial: suggested,
        note: <Note>从 ComfyUI 默认的文生图工作流开始（加载模型 → 提示词 → 采样 → 解码 → 保存图像），创建后可修改每个节点的参数。</Note>,
        onSave: (name) => create(name, defaultComfyGraph()),
      }),
    /** Reads the file here, in the browser: only a graph that parses is sent. */
    importFile: async (file: File) => {
      setProblem(null);
      const parsed = parseGraphJson(await file.text());
      if (!parsed.ok) return setProblem({ file: file.name, title: parsed.title, detail: parsed.detail });
      setNameRequest({
        title: '导入工作流',
        okText: '导入并编辑',
        initial: nameFromFile(file.name),
        note: <ImportSummary file={file.name} graph={parsed.graph} />,
        onSave: (name) => create(name, parsed.graph),
      });
    },
    rename: (w: ComfyWorkflow) =>
      setNameRequest({
        title: '重命名工作流',
        okText: '保存',
        initial: w.name,
        onSave: (name) => comfyApi.rename(w.id, name).then((saved) => storeWorkflow(queryClient, saved)),
      }),
    remove: (id: string) => remove.mutateAsync(id).catch(() => undefined),
  };
}

type Actions = ReturnType<typeof useWorkflowActions>;

/** 导入 JSON: picks a .json file and reads it here; nothing is uploaded as a file. */
function ImportButton({ actions, primary = false }: { actions: Actions; primary?: boolean }) {
  return (
    <Upload
      accept=".json,application/json"
      showUploadList={false}
      beforeUpload={(file) => {
        void actions.importFile(file);
        return Upload.LIST_IGNORE;
      }}
    >
      <Button icon={<ImportOutlined />} type={primary ? 'primary' : 'default'} ghost={primary}>
        导入 JSON
      </Button>
    </Upload>
  );
}

function columns(onOpen: (id: string) => void, actions: Actions): TableColumnsType<ComfyWorkflow> {
  return [
    {
      title: '名称',
      key: 'name',
      ellipsis: true,
      render: (_, w) => (
        <Button type="link" size="small" style={{ padding: 0, maxWidth: '100%' }} onClick={() => onOpen(w.id)} title={w.name}>
          <Typography.Text ellipsis style={{ color: 'inherit' }}>
            {w.name}
          </Typography.Text>
        </Button>
      ),
    },
    { title: '节点数', key: 'nodes', width: 80, render: (_, w) => `${w.nodes} 个` },
    { title: '更新时间', key: 'updatedAt', width: 160, render: (_, w) => formatBeijing(w.updatedAt) },
    {
      title: '操作',
      key: 'actions',
      width: 290,
      render: (_, w) => (
        <Space size={0}>
          <Button type="link" size="small" onClick={() => onOpen(w.id)}>
            编辑
          </Button>
          <Button type="link" size="small" onClick={() => actions.rename(w)}>
            重命名
          </Button>
          <Button type="link" size="small" onClick={() => downloadGraph(w.name, w.graph)}>
            导出 JSON
          </Button>
          <Popconfirm
            title={`删除工作流「${w.name}」？`}
            description="删除后不可恢复；已生成的图片仍保留在画廊"
            okText="删除"
            okButtonProps={{ danger: true }}
            cancelText="取消"
            onConfirm={() => actions.remove(w.id)}
          >
            <Button type="link" size="small" danger>
              删除
            </Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];
}

function EmptyWorkflows({ actions, suggested }: { actions: Actions; suggested: string }) {
  return (
    <Empty
      image={Empty.PRESENTED_IMAGE_SIMPLE}
      description={
        <Flex vertical gap={4} style={{ maxWidth: 520, margin: '0 auto' }}>
          <Typography.Text strong>还没有工作流</Typography.Text>
          <Typography.Text type="secondary">
            工作流是 ComfyUI
            的节点图：加载模型、编码提示词、采样、解码、保存图像，每个节点做一步，连起来就是一次出图。可以从默认的文生图工作流开始，也可以导入在 ComfyUI 中用
            “Save (API Format)” 导出的 JSON。
          </Typography.Text>
        </Flex>
      }
    >
      <Space wrap style={{ justifyContent: 'center' }}>
        <Button type="primary" icon={<FileAddOutlined />} onClick={() => actions.startNew(suggested)}>
          新建工作流
        </Button>
        <ImportButton actions={actions} primary />
      </Space>
    </Empty>
  );
}

export function WorkflowList({ onOpen, onDeleted }: { onOpen: (id: string) => void; onDeleted: (id: string) => void }) {
  const { paging, set } = useUrlPaging();
  const list = usePagedQuery({
    queryKey: COMFY_KEYS.workflowList(paging.page, paging.pageSize),
    queryFn: (signal) => comfyApi.workflows(paging, signal),
  });
  const actions = useWorkflowActions(onOpen, onDeleted);
  const suggested = `工作流 ${(list.data?.total ?? 0) + 1}`;
  const empty = list.data?.total === 0;

  return (
    <Card
      title="我的工作流"
      className="card-head-wrap"
      extra={
        <Space wrap>
          {!empty && (
            <>
              <ImportButton actions={actions} />
              <Button type="primary" icon={<FileAddOutlined />} onClick={() => actions.startNew(suggested)}>
                新建工作流
              </Button>
            </>
          )}
          <RefreshButton list={list} />
        </Space>
      }
    >
      <Flex vertical gap={12}>
        {actions.problem && (
          <Alert
            type="error"
            showIcon
            closable={{ onClose: actions.clearProblem }}
            title={`无法导入「${actions.problem.file}」：${actions.problem.title}`}
            description={actions.problem.detail}
            data-testid="import-problem"
          />
        )}
        <PagedTable<ComfyWorkflow>
          rowKey="id"
          columns={columns(onOpen, actions)}
          scroll={{ x: 680 }}
          list={list}
          paging={paging}
          onPage={set}
          unit="个"
          totalNote={`最多保存 ${COMFY_MAX_WORKFLOWS} 个`}
          empty={<EmptyWorkflows actions={actions} suggested={suggested} />}
        />
      </Flex>
      <WorkflowNameModal request={actions.nameRequest} onClose={actions.closeName} />
    </Card>
  );
}
