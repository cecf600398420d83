import { useState } from 'react';
import { Button, Card, Form, Input, Space, Tabs, Typography, type FormRule as Rule } from 'antd';
import { LockOutlined, MobileOutlined, SafetyOutlined, TeamOutlined, UserOutlined } from '@ant-design/icons';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import { PAGE, PASSWORD_RULE, childLoginSchema, isStrongPassword, mobileSchema, type AuthResult, type ChildLogin } from '@console/contract';
import type { z } from 'zod';
import { childApi } from '../../api/account';
import { safeRedirect } from '../../auth/guard';
import { userApi } from '../../api/user';
import { Logo } from '../../layouts/Logo';
import { useSession } from '../../session/useSession';
import { SmsCodeButton } from './SmsCodeButton';

const PASSWORD_HINT = `${PASSWORD_RULE.min}-${PASSWORD_RULE.max} 位，且同时包含字母和数字`;

const mobileRules: Rule[] = [
  { required: true, message: '请输入手机号' },
  {
    validator: async (_, value: string | undefined) => {
      if (value && !mobileSchema.safeParse(value).success) throw new Error('请输入正确的 11 位手机号');
    },
  },
];
const codeRules: Rule[] = [
  { required: true, message: '请输入验证码' },
  { pattern: /^\d{6}$/, message: '验证码为 6 位数字' },
];
const newPasswordRules: Rule[] = [
  { required: true, message: '请输入密码' },
  {
    validator: async (_, value: string | undefined) => {
      if (value && !isStrongPassword(value)) throw new Error(`密码需 ${PASSWORD_HINT}`);
    },
  },
];

/** /login and /register: one screen, two modes (spec §2). */
export default function AuthPage() {
  const { pathname, search } = useLocation();
  const isRegister = pathname === PAGE.register;
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const { signIn } = useSession();

  /** Store the session, then go where the user was heading; the guard routes child accounts. */
  function onSignedIn(result: AuthResult) {
    signIn(result);
    navigate(safeRedirect(params.get('redirect')) ?? PAGE.cloudGpu, { replace: true });
  }

  return (
    <div className="auth-screen">
      <Card style={{ width: 420, maxWidth: '100%' }}>
        <Space orientation="vertical" size={16} style={{ width: '100%' }}>
          <Logo />
          <Typography.Title level={3} style={{ margin: 0 }}>
            {isRegister ? '注册账号' : '欢迎登录'}
          </Typography.Title>
          {isRegister ? <RegisterForm onDone={onSignedIn} /> : <LoginForms onDone={onSignedIn} />}
          <Typography.Text type="secondary">
            {isRegister ? '已有账号？' : '还没有账号？'}
            <Link to={(isRegister ? PAGE.login : PAGE.register) + search}>{isRegister ? '立即登录' : '立即注册'}</Link>
          </Typography.Text>
        </Space>
      </Card>
    </div>
  );
}

function LoginForms({ onDone }: { onDone: (r: AuthResult) => void }) {
  return (
    <Tabs
      items={[
        { key: 'password', label: '密码登录', children: <PasswordLoginForm onDone={onDone} /> },
        { key: 'sms', label: '验证码登录', children: <SmsLoginForm onDone={onDone} /> },
        { key: 'child', label: '子账号登录', children: <ChildLoginForm onDone={onDone} /> },
      ]}
    />
  );
}

/** Runs a submit with a loading flag; failures were already shown by the request layer. */
function useSubmit<T>(action: (values: T) => Promise<AuthResult>, onDone: (r: AuthResult) => void) {
  const [loading, setLoading] = useState(false);
  async function onFinish(values: T) {
    setLoading(true);
    try {
      onDone(await action(values));
    } catch {
      // shown by the request layer
    } finally {
      setLoading(false);
    }
  }
  return { loading, onFinish };
}

function PasswordLoginForm({ onDone }: { onDone: (r: AuthResult) => void }) {
  const { loading, onFinish } = useSubmit(
    (v: { account: string; password: string }) => userApi.login({ account: v.account.trim(), password: v.password }),
    onDone,
  );
  return (
    <Form layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="account" label="账号" rules={[{ required: true, message: '请输入手机号或邮箱' }]}>
        <Input prefix={<UserOutlined />} placeholder="手机号或邮箱" autoComplete="username" />
      </Form.Item>
      <Form.Item name="password" label="密码" rules={[{ required: true, message: '请输入密码' }]}>
        <Input.Password prefix={<LockOutlined />} placeholder="请输入密码" autoComplete="current-password" />
      </Form.Item>
      <Button type="primary" htmlType="submit" block loading={loading}>
        登录
      </Button>
    </Form>
  );
}

function SmsLoginForm({ onDone }: { onDone: (r: AuthResult) => void }) {
  const [form] = Form.useForm<{ mobile: string; code: string }>();
  const { loading, onFinish } = useSubmit((v: { mobile: string; code: string }) => userApi.login({ mobile: v.mobile.trim(), code: v.code.trim() }), onDone);
  return (
    <Form form={form} layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="mobile" label="手机号" rules={mobileRules}>
        <Input prefix={<MobileOutlined />} placeholder="请输入手机号" autoComplete="tel" maxLength={11} />
      </Form.Item>
      <CodeField scene="login" getMobile={async () => (await form.validateFields(['mobile'])).mobile.trim()} />
      <Button type="primary" htmlType="submit" block loading={loading}>
        登录
      </Button>
    </Form>
  );
}

/** A field checked by the contract's own schema, so the form refuses exactly what the server would. */
function schemaRules(required: string, schema: z.ZodType): Rule[] {
  return [
    { required: true, message: required },
    {
      validator: async (_, value: string | undefined) => {
        if (!value) return;
        const parsed = schema.safeParse(value);
        if (!parsed.success) throw new Error(parsed.error.issues[0]?.message);
      },
    },
  ];
}
const childFields = childLoginSchema.shape;

/** A child account logs in with its parent's mobile number, its own name and its password. */
function ChildLoginForm({ onDone }: { onDone: (r: AuthResult) => void }) {
  const { loading, onFinish } = useSubmit(
    (v: ChildLogin) => childApi.login({ parentMobile: v.parentMobile.trim(), childName: v.childName.trim(), password: v.password }),
    onDone,
  );
  return (
    <Form layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="parentMobile" label="主账号手机号" rules={schemaRules('请输入主账号手机号', childFields.parentMobile)}>
        <Input prefix={<MobileOutlined />} placeholder="主账号的手机号" autoComplete="tel" maxLength={11} />
      </Form.Item>
      <Form.Item name="childName" label="子账号名" rules={schemaRules('请输入子账号名', childFields.childName)}>
        <Input prefix={<TeamOutlined />} placeholder="主账号为你创建的子账号名" autoComplete="username" maxLength={20} />
      </Form.Item>
      <Form.Item name="password" label="密码" rules={schemaRules('请输入密码', childFields.password)}>
        <Input.Password prefix={<LockOutlined />} placeholder="请输入子账号密码" autoComplete="current-password" />
      </Form.Item>
      <Button type="primary" htmlType="submit" block loading={loading}>
        登录
      </Button>
    </Form>
  );
}

function RegisterForm({ onDone }: { onDone: (r: AuthResult) => void }) {
  const [form] = Form.useForm<{ mobile: string; code: string; password: string }>();
  const { loading, onFinish } = useSubmit(
    (v: { mobile: string; code: string; password: string }) => userApi.register({ mobile: v.mobile.trim(), code: v.code.trim(), password: v.password }),
    onDone,
  );
  return (
    <Form form={form} layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="mobile" label="手机号" rules={mobileRules}>
        <Input prefix={<MobileOutlined />} placeholder="请输入手机号" autoComplete="tel" maxLength={11} />
      </Form.Item>
      <CodeField scene="register" getMobile={async () => (await form.validateFields(['mobile'])).mobile.trim()} />
      <Form.Item name="password" label="密码" rules={newPasswordRules} extra={`密码需 ${PASSWORD_HINT}`}>
        <Input.Password prefix={<LockOutlined />} placeholder="设置登录密码" autoComplete="new-password" />
      </Form.Item>
      <Button type="primary" htmlType="submit" block loading={loading}>
        注册
      </Button>
    </Form>
  );
}

/** The code input with its send button; checks the mobile field before asking for a code. */
function CodeField({ scene, getMobile }: { scene: 'login' | 'register'; getMobile: () => Promise<string> }) {
  return (
    <Form.Item label="验证码" required>
      <Space.Compact style={{ width: '100%' }}>
        <Form.Item name="code" rules={codeRules} noStyle>
          <Input prefix={<SafetyOutlined />} placeholder="6 位验证码" autoComplete="one-time-code" maxLength={6} />
        </Form.Item>
        <SmsCodeButton scene={scene} getMobile={getMobile} />
      </Space.Compact>
    </Form.Item>
  );
}
