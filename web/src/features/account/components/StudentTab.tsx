import { useState } from 'react';
import { Alert, Button, Col, Form, Input, InputNumber, Result, Row, Select, Space, Spin } from 'antd';
import { UploadOutlined } from '@ant-design/icons';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { discountText, EducationLevel, SCHOOL_EMAIL, type StudentVerification, type StudentVerificationRequest } from '@console/contract';
import { ACCOUNT_KEYS, studentApi, accountQueries } from '../api/account';
import { userApi } from '../../../api/user';
import { CodeButton } from '../../../components/CodeButton';
import { LoadError } from '../../../components/LoadError';
import { session } from '../../../session/store';
import { ReviewImageUpload } from './ReviewImageUpload';

/** Student verification: school e-mail code + student card → operator review → student price. */
export function StudentTab() {
  const query = useQuery(accountQueries.student());
  if (query.isPending) return <Spin style={{ display: 'block', margin: 48 }} />;
  if (query.isError) return <LoadError error={query.error} onRetry={() => query.refetch()} />;
  const v = query.data;
  const discount = discountText(v.discountRate);
  if (v.status === 'Succeed') {
    return (
      <Result
        status="success"
        title="已通过学生认证"
        subTitle={`${v.school} · ${v.level ? EducationLevel.label(v.level) : ''}，${v.graduateYear} 年毕业前购买 GPU 实例享学生价${discount ? `（${discount}）` : ''}`}
      />
    );
  }
  if (v.status === 'Pending') return <Result status="info" title="学生认证审核中" subTitle="运营人员将在 1 个工作日内完成审核。" />;
  return <StudentForm v={v} discount={discount} />;
}

function StudentForm({ v, discount }: { v: StudentVerification; discount: string }) {
  const [form] = Form.useForm<StudentVerificationRequest>();
  const queryClient = useQueryClient();
  const [busy, setBusy] = useState(false);
  const thisYear = new Date().getFullYear();
  const set = (next: StudentVerification) => queryClient.setQueryData(ACCOUNT_KEYS.student, next);

  const upload = (file: File) => void studentApi.uploadImage(file).then(set, () => undefined);
  const submit = async (values: StudentVerificationRequest) => {
    setBusy(true);
    try {
      set(await studentApi.submit(values));
      const me = await userApi.me().catch(() => null);
      if (me) session.setUser(me);
    } catch {
      // shown by the request layer
    } finally {
      setBusy(false);
    }
  };

  return (
    <Space direction="vertical" size={16} style={{ maxWidth: 640, width: '100%' }}>
      <Alert
        type="info"
        showIcon
        title={`在校学生通过认证后购买 GPU 实例享学生价${discount ? `（${discount}）` : ''}。需验证学校邮箱并上传学生证照片，人工审核约 1 个工作日。`}
      />
      {v.status === 'Failed' && <Alert type="error" showIcon title={`学生认证未通过：${v.reason}。请修改后重新提交。`} />}
      <Form
        form={form}
        layout="vertical"
        requiredMark={false}
        onFinish={submit}
        initialValues={{
          school: v.school || undefined,
          level: v.level ?? undefined,
          enrollYear: v.enrollYear ?? undefined,
          graduateYear: v.graduateYear ?? undefined,
          email: v.email || undefined,
        }}
      >
        <Form.Item
          name="school"
          label="学校名称"
          rules={[
            { required: true, message: '请输入学校名称' },
            { min: 2, max: 60, message: '学校名称为 2-60 个字符' },
          ]}
        >
          <Input placeholder="如：清华大学" />
        </Form.Item>
        <Form.Item name="level" label="学历" rules={[{ required: true, message: '请选择学历' }]}>
          <Select placeholder="请选择" options={EducationLevel.values.map((l) => ({ value: l, label: EducationLevel.label(l) }))} />
        </Form.Item>
        <Row gutter={16}>
          <Col span={12}>
            <Form.Item name="enrollYear" label="入学年份" rules={[{ required: true, message: '请输入入学年份' }]}>
              <InputNumber min={thisYear - 10} max={thisYear} precision={0} style={{ width: '100%' }} />
            </Form.Item>
          </Col>
          <Col span={12}>
            <Form.Item
              name="graduateYear"
              label="预计毕业年份"
              dependencies={['enrollYear']}
              rules={[
                { required: true, message: '请输入毕业年份' },
                ({ getFieldValue }) => ({
                  validator: async (_, g?: number) => {
                    if (g !== undefined && g < thisYear) throw new Error('毕业年份已过，不能申请学生认证');
                    const e = getFieldValue('enrollYear') as number | undefined;
                    if (g !== undefined && e !== undefined && g < e) throw new Error('毕业年份不能早于入学年份');
                  },
                }),
              ]}
            >
              <InputNumber min={thisYear} max={thisYear + 10} precision={0} style={{ width: '100%' }} />
            </Form.Item>
          </Col>
        </Row>
        <Form.Item label="学校邮箱" required>
          <Space.Compact style={{ width: '100%' }}>
            <Form.Item
              name="email"
              noStyle
              rules={[
                { required: true, message: '请输入学校邮箱' },
                { pattern: SCHOOL_EMAIL, message: '请使用学校邮箱（如 name@xxx.edu.cn）' },
              ]}
            >
              <Input placeholder="name@xxx.edu.cn" aria-label="学校邮箱" />
            </Form.Item>
            <CodeButton getTarget={async () => (await form.validateFields(['email'])).email} send={studentApi.sendEmailCode} />
          </Space.Compact>
        </Form.Item>
        <Form.Item
          name="code"
          label="邮箱验证码"
          rules={[
            { required: true, message: '请输入验证码' },
            { pattern: /^\d{6}$/, message: '验证码为 6 位数字' },
          ]}
        >
          <Input maxLength={6} placeholder="6 位数字" />
        </Form.Item>
        <Form.Item label="学生证照片" required extra="学生证个人信息页与注册页，PNG/JPEG/WEBP，不超过 5 MB">
          <Space>
            <ReviewImageUpload what="学生证" onUpload={upload}>
              <Button icon={<UploadOutlined />}>{v.imageUploaded ? '重新上传' : '上传学生证'}</Button>
            </ReviewImageUpload>
            {v.imageUploaded && <span>已上传</span>}
          </Space>
        </Form.Item>
        <Button type="primary" htmlType="submit" loading={busy} disabled={!v.imageUploaded}>
          提交审核
        </Button>
      </Form>
    </Space>
  );
}
