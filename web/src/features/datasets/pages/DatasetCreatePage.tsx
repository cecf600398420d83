import { Button, Card, Form, Input, Radio } from 'antd';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { DATASET_KIND_LABELS, PAGE, datasetKindSchema, type DatasetKind } from '@console/contract';
import { DATASET_KEYS, datasetApi, type DatasetFields } from '../api/datasets';
import { PageFrame } from '../../../components/PageFrame';
import { datasetUploadPath } from '../utils/paths';

const KIND_HINTS: Record<DatasetKind, string> = {
  person: '同一个人物或角色的多张图片，训练后可用触发词画出这个人物',
  style: '同一种画风的图片，训练后可用触发词画出这种风格',
  concept: '一种物体、动作或构图，训练后可用触发词画出这个概念',
};

/** /sd/dataset/create — name, type, trigger word and description; then on to uploading its images. */
export default function DatasetCreatePage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [form] = Form.useForm<DatasetFields>();
  const kind = Form.useWatch('kind', form) ?? 'person';
  const create = useMutation({
    mutationFn: (body: DatasetFields) => datasetApi.create(body),
    onSuccess: (d) => {
      void queryClient.invalidateQueries({ queryKey: DATASET_KEYS.all });
      navigate(datasetUploadPath(d.id));
    },
  });

  return (
    <PageFrame>
      <Card style={{ maxWidth: 720 }}>
        <Form<DatasetFields>
          form={form}
          layout="vertical"
          initialValues={{ kind: 'person', description: '', triggerWord: '' }}
          onFinish={(v) => create.mutate(v)}
          requiredMark={false}
        >
          <Form.Item
            name="name"
            label="数据集名称"
            rules={[
              { required: true, whitespace: true, message: '请输入数据集名称' },
              { max: 40, message: '数据集名称最多 40 个字符' },
            ]}
          >
            <Input placeholder="例如：我的角色" maxLength={40} showCount />
          </Form.Item>
          <Form.Item name="kind" label="数据集类型" extra={KIND_HINTS[kind]}>
            <Radio.Group
              optionType="button"
              buttonStyle="solid"
              options={datasetKindSchema.options.map((k) => ({ value: k, label: DATASET_KIND_LABELS[k] }))}
            />
          </Form.Item>
          <Form.Item
            name="triggerWord"
            label="触发词"
            extra="生成图片时写在提示词里唤起训练结果的词，只能用英文字母、数字、下划线和短横线；导出时文件夹名为「重复次数_触发词」"
            rules={[
              { pattern: /^[A-Za-z0-9_-]*$/, message: '触发词只能包含英文字母、数字、下划线和短横线' },
              { max: 40, message: '触发词最多 40 个字符' },
            ]}
          >
            <Input placeholder="例如：mychar" maxLength={40} />
          </Form.Item>
          <Form.Item name="description" label="描述" rules={[{ max: 500, message: '描述最多 500 个字符' }]}>
            <Input.TextArea rows={3} maxLength={500} showCount placeholder="选填" />
          </Form.Item>
          <Form.Item style={{ marginBottom: 0 }}>
            <Button type="primary" htmlType="submit" loading={create.isPending}>
              创建并上传图片
            </Button>
            <Button style={{ marginLeft: 8 }} onClick={() => navigate(PAGE.sdDataset)}>
              取消
            </Button>
          </Form.Item>
        </Form>
      </Card>
    </PageFrame>
  );
}
