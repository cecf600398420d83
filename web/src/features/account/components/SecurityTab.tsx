import { Alert, Button, Card, Flex, Form, Input, Space } from 'antd';
import type { Rule } from 'antd/es/form';
import type { User, CodeSent } from '@console/contract';
import { userApi } from '../../../api/user';
import { CodeButton } from '../../../components/CodeButton';
import { session } from '../../../session/store';
import { useSession } from '../../../session/useSession';
import { confirmPasswordRules, passwordRules } from '../../../lib/passwordRules';

const newPasswordRules = passwordRules('请输入新密码');

/**
 * 安全设置: password (other sessions end), mobile (code to the new number), e-mail (code to the
 * address). A child's are its parent's to manage (the server refuses the child, 40300006).
 */
export function SecurityTab() {
  const { user } = useSession();
  if (user?.isChild)
    return (
      <Flex vertical gap={16} style={{ maxWidth: 560 }}>
        <Alert
          type="info"
          showIcon
          title="登录密码、手机号和邮箱由主账号管理"
          description="子账号使用主账号手机号和子账号名登录；需要修改密码时，请联系主账号在“账号中心 → 子账号”中重设。"
        />
      </Flex>
    );
  return (
    <Flex vertical gap={16} style={{ maxWidth: 560 }}>
      <PasswordCard />
      <MobileCard current={user?.mobile ?? ''} />
      <EmailCard current={user?.email ?? ''} />
    </Flex>
  );
}

function PasswordCard() {
  const [form] = Form.useForm<{ oldPassword: string; password: string; confirm: string }>();
  const submit = async ({ oldPassword, password }: { oldPassword: string; password: string }) => {
    await userApi.changePassword({ oldPassword, password }).then(
      () => form.resetFields(),
      () => undefined,
    );
  };
  return (
    <Card size="small" title="登录密码" extra="修改后其他设备上的登录将失效">
      <Form form={form} layout="vertical" requiredMark={false} onFinish={submit}>
        <Form.Item name="oldPassword" label="原密码" rules={[{ required: true, message: '请输入原密码' }]}>
          <Input.Password autoComplete="current-password" />
        </Form.Item>
        <Form.Item name="password" label="新密码" rules={newPasswordRules}>
          <Input.Password autoComplete="new-password" />
        </Form.Item>
        <Form.Item name="confirm" label="确认新密码" dependencies={['password']} rules={confirmPasswordRules}>
          <Input.Password autoComplete="new-password" />
        </Form.Item>
        <Button type="primary" htmlType="submit">
          修改密码
        </Button>
      </Form>
    </Card>
  );
}

const CODE_RULES = [
  { required: true, message: '请输入验证码' },
  { pattern: /^\d{6}$/, message: '验证码为 6 位数字' },
];

/** A new mobile number or e-mail address, proven by a code sent to it. */
function ContactCard(props: {
  title: string;
  field: 'mobile' | 'email';
  current: string;
  shown: string;
  rules: Rule[];
  send: (target: string) => Promise<CodeSent>;
  save: (values: Record<'mobile' | 'email' | 'code', string>) => Promise<User>;
  action: string;
}) {
  const [form] = Form.useForm<Record<'mobile' | 'email' | 'code', string>>();
  const submit = async (v: Record<'mobile' | 'email' | 'code', string>) => {
    const user = await props.save(v).catch(() => null);
    if (user) {
      session.setUser(user);
      form.resetFields();
    }
  };
  return (
    <Card size="small" title={props.title} extra={props.current ? `当前：${props.shown}` : '未绑定'}>
      <Form form={form} layout="vertical" requiredMark={false} onFinish={submit}>
        <Form.Item name={props.field} label={props.current ? `新${props.title}` : props.title} rules={props.rules}>
          <Input maxLength={props.field === 'mobile' ? 11 : 254} />
        </Form.Item>
        <Form.Item label="验证码" required>
          <Space.Compact style={{ width: '100%' }}>
            <Form.Item name="code" noStyle rules={CODE_RULES}>
              <Input maxLength={6} aria-label="验证码" />
            </Form.Item>
            <CodeButton getTarget={async () => (await form.validateFields([props.field]))[props.field]} send={props.send} />
          </Space.Compact>
        </Form.Item>
        <Button htmlType="submit">{props.action}</Button>
      </Form>
    </Card>
  );
}

function MobileCard({ current }: { current: string }) {
  return (
    <ContactCard
      title="手机号"
      field="mobile"
      current={current}
      shown={current.replace(/^(\d{3})\d{4}(\d{4})$/, '$1****$2')}
      rules={[
        { required: true, message: '请输入新手机号' },
        { pattern: /^1[3-9]\d{9}$/, message: '请输入正确的 11 位手机号' },
      ]}
      send={(mobile) => userApi.sendSmsCode({ mobile, scene: 'mobile' })}
      save={({ mobile, code }) => userApi.changeMobile({ mobile, code })}
      action="更换手机号"
    />
  );
}

function EmailCard({ current }: { current: string }) {
  return (
    <ContactCard
      title="邮箱"
      field="email"
      current={current}
      shown={current}
      rules={[
        { required: true, message: '请输入邮箱' },
        { type: 'email', message: '请输入正确的邮箱地址' },
      ]}
      send={userApi.sendEmailCode}
      save={({ email, code }) => userApi.changeEmail({ email, code })}
      action={current ? '更换邮箱' : '绑定邮箱'}
    />
  );
}
