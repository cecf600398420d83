import { useState } from 'react';
import { App, Button, Card, Checkbox, Flex, Form, Input, Space, Tabs, Typography, type FormRule as Rule } from 'antd';
import { LockOutlined, MobileOutlined, SafetyOutlined, TeamOutlined, UserOutlined } from '@ant-design/icons';
import { useQueryClient } from '@tanstack/react-query';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import {
  AGREEMENT_REQUIRED_MESSAGE,
  PAGE,
  PASSWORD_RULE,
  childLoginSchema,
  isStrongPassword,
  mobileSchema,
  type AuthResult,
  type ChildLogin,
} from '@console/contract';
import type { z } from 'zod';
import { childApi } from '../../account';
import { safeRedirect } from '../../../auth/guard';
import { userApi } from '../../../api/user';
import { Logo } from '../../../layouts/Logo';
import { session } from '../../../session/store';
import { useSession } from '../../../session/useSession';
import { confirmPasswordRules } from '../../../lib/passwordRules';
import { SmsCodeButton } from '../components/SmsCodeButton';

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

/** /login and /register: one screen, two modes (spec §2); /password/reset (忘记密码) on the same card. */
export default function AuthPage() {
  const { pathname, search } = useLocation();
  const isRegister = pathname === PAGE.register;
  const isReset = pathname === PAGE.resetPassword;
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
            {isReset ? '找回密码' : isRegister ? '注册账号' : '欢迎登录'}
          </Typography.Title>
          {isReset ? (
            <ResetPasswordForm onDone={() => navigate(PAGE.login + search, { replace: true })} />
          ) : isRegister ? (
            <RegisterForm onDone={onSignedIn} />
          ) : (
            <LoginForms onDone={onSignedIn} />
          )}
          {isReset ? (
            <Typography.Text type="secondary">
              想起密码了？<Link to={PAGE.login + search}>返回登录</Link>
            </Typography.Text>
          ) : (
            <Typography.Text type="secondary">
              {isRegister ? '已有账号？' : '还没有账号？'}
              <Link to={(isRegister ? PAGE.login : PAGE.register) + search}>{isRegister ? '立即登录' : '立即注册'}</Link>
            </Typography.Text>
          )}
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
  const { search } = useLocation();
  const { loading, onFinish } = useSubmit(
    (v: { account: string; password: string }) => userApi.login({ account: v.account.trim(), password: v.password }),
    onDone,
  );
  return (
    <Form layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="account" label="账号" rules={[{ required: true, message: '请输入手机号或邮箱' }]}>
        <Input prefix={<UserOutlined />} placeholder="手机号或邮箱" autoComplete="username" />
      </Form.Item>
      <Form.Item name="password" label="密码" rules={[{ required: true, message: '请输入密码' }]} style={{ marginBottom: 8 }}>
        <Input.Password prefix={<LockOutlined />} placeholder="请输入密码" autoComplete="current-password" />
      </Form.Item>
      <Flex justify="flex-end" style={{ marginBottom: 16 }}>
        <Link to={PAGE.resetPassword + search}>忘记密码</Link>
      </Flex>
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

/** The consent box: unticked by default, required (the server refuses a registration without it too). */
const agreementRules: Rule[] = [
  {
    validator: async (_, value: boolean | undefined) => {
      if (!value) throw new Error(AGREEMENT_REQUIRED_MESSAGE);
    },
  },
];

function RegisterForm({ onDone }: { onDone: (r: AuthResult) => void }) {
  const [form] = Form.useForm<{ mobile: string; code: string; password: string; agreed: boolean }>();
  const { loading, onFinish } = useSubmit(
    // The box as ticked (the form only submits it ticked; the server checks it again).
    (v: { mobile: string; code: string; password: string; agreed: boolean }) =>
      userApi.register({ mobile: v.mobile.trim(), code: v.code.trim(), password: v.password, agreed: v.agreed as true }),
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
      <Form.Item name="agreed" valuePropName="checked" rules={agreementRules}>
        <Checkbox>
          我已阅读并同意
          {/* New tabs, so the half-filled form stays as it is. */}
          <Link to={PAGE.agreementUser} target="_blank" rel="noopener">
            《用户协议》
          </Link>
          和
          <Link to={PAGE.agreementPrivacy} target="_blank" rel="noopener">
            《隐私政策》
          </Link>
        </Checkbox>
      </Form.Item>
      <Button type="primary" htmlType="submit" block loading={loading}>
        注册
      </Button>
    </Form>
  );
}

/**
 * 忘记密码: a new password, proven by an SMS code to the account's mobile. The server then ends every
 * session of the account, this browser's included, so the user logs in again with the new password.
 */
function ResetPasswordForm({ onDone }: { onDone: () => void }) {
  const [form] = Form.useForm<{ mobile: string; code: string; password: string; confirm: string }>();
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const [loading, setLoading] = useState(false);
  async function onFinish(v: { mobile: string; code: string; password: string }) {
    setLoading(true);
    try {
      await userApi.resetPassword({ mobile: v.mobile.trim(), code: v.code.trim(), password: v.password });
    } catch {
      return; // shown by the request layer
    } finally {
      setLoading(false);
    }
    // The server has ended this browser's session too: forget it here without asking it again (a 401 would say 登录已失效).
    if (session.getToken() !== null) {
      session.clear();
      queryClient.clear();
    }
    message.success('密码已重置，请使用新密码登录');
    onDone();
  }
  return (
    <Form form={form} layout="vertical" onFinish={onFinish} requiredMark={false}>
      <Form.Item name="mobile" label="手机号" rules={mobileRules}>
        <Input prefix={<MobileOutlined />} placeholder="注册时使用的手机号" autoComplete="tel" maxLength={11} />
      </Form.Item>
      <CodeField scene="reset" getMobile={async () => (await form.validateFields(['mobile'])).mobile.trim()} />
      <Form.Item name="password" label="新密码" rules={newPasswordRules} extra={`密码需 ${PASSWORD_HINT}`}>
        <Input.Password prefix={<LockOutlined />} placeholder="设置新的登录密码" autoComplete="new-password" />
      </Form.Item>
      <Form.Item name="confirm" label="确认新密码" dependencies={['password']} rules={confirmPasswordRules}>
        <Input.Password prefix={<LockOutlined />} placeholder="再次输入新密码" autoComplete="new-password" />
      </Form.Item>
      <Button type="primary" htmlType="submit" block loading={loading}>
        重置密码
      </Button>
    </Form>
  );
}

/** The code input with its send button; checks the mobile field before asking for a code. */
function CodeField({ scene, getMobile }: { scene: 'login' | 'register' | 'reset'; getMobile: () => Promise<string> }) {
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
