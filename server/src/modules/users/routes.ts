import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  authResultSchema,
  balanceFloorSchema,
  changeEmailSchema,
  childLoginSchema,
  changeMobileSchema,
  changePasswordSchema,
  fileParamsSchema,
  loginSchema,
  okSchema,
  passwordResetSchema,
  registerSchema,
  registerValidateSchema,
  seesPayerFinance,
  userInfoSchema,
  userSchema,
  type UserInfo,
} from '@console/contract';
import { clientMeta } from '../../http/client-meta.js';
import { AppError } from '../../http/errors.js';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import type { StorageDriver } from '../../drivers/storage/types.js';
import type { VerificationService } from '../verification/index.js';
import { PRIVATE_FILES, readUploadedImage } from '../../http/upload.js';
import type { BalanceFloors } from './balance-floor.js';
import type { SessionService } from './sessions.js';
import type { UserService } from './service.js';

const tags = ['账号'];

/** The payer's money fields of the user object: the gifts module's, which sits above users (it reads accounts). */
export interface PayerMoneyFields {
  userFields(payerId: string): Promise<Partial<UserInfo>>;
}

/** Sets and clears the session cookie (its options are the server's configuration). */
export interface SessionCookies {
  set(reply: FastifyReply, token: string): void;
  clear(reply: FastifyReply): void;
}

export interface UserRoutesDeps {
  auth: AuthGuards;
  users: UserService;
  sessions: SessionService;
  codes: VerificationService;
  gifts: PayerMoneyFields;
  balanceFloors: BalanceFloors;
  storage: StorageDriver;
  cookies: SessionCookies;
  uploadMaxBytes: number;
}

export async function userRoutes(app: FastifyInstance, deps: UserRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireAuth } = deps.auth;
  /** onRequest of the mobile, e-mail and password changes: a logged-in main account (a child's are its parent's). */
  const requireOwnCredentials = async (request: FastifyRequest, reply: FastifyReply) => {
    await requireAuth(request, reply);
    deps.users.assertOwnsCredentials(currentSession(request).user);
  };

  r.post(
    API.registerValidate,
    { schema: { tags, summary: '校验注册验证码（不消耗）', body: registerValidateSchema, response: { 200: okSchema } } },
    async (request) => {
      await deps.codes.verify(request.body.mobile, 'register', request.body.code);
      return { ok: true as const };
    },
  );

  r.post(API.register, { schema: { tags, summary: '手机号注册', body: registerSchema, response: { 200: authResultSchema } } }, async (request, reply) => {
    const result = await deps.users.register(request.body, clientMeta(request));
    deps.cookies.set(reply, result.token);
    return result;
  });

  r.post(
    API.login,
    { schema: { tags, summary: '登录（密码或短信验证码）', body: loginSchema, response: { 200: authResultSchema } } },
    async (request, reply) => {
      const body = request.body;
      const result = 'account' in body ? await deps.users.loginByPassword(body, clientMeta(request)) : await deps.users.loginByCode(body, clientMeta(request));
      deps.cookies.set(reply, result.token);
      return result;
    },
  );

  r.post(
    API.childLogin,
    { schema: { tags, summary: '子账号登录（主账号手机号 + 子账号名 + 密码）', body: childLoginSchema, response: { 200: authResultSchema } } },
    async (request, reply) => {
      const result = await deps.users.loginChild(request.body, clientMeta(request));
      deps.cookies.set(reply, result.token);
      return result;
    },
  );

  r.post(API.logout, { schema: { tags, summary: '退出登录', response: { 200: okSchema } }, onRequest: requireAuth }, async (request, reply) => {
    await deps.sessions.revoke(currentSession(request).sessionId, 'logout');
    deps.cookies.clear(reply);
    return { ok: true as const };
  });

  r.post(
    API.passwordReset,
    { schema: { tags, summary: '通过短信验证码重置密码', body: passwordResetSchema, response: { 200: okSchema } } },
    async (request) => {
      await deps.users.resetPassword(request.body);
      return { ok: true as const };
    },
  );

  r.get(
    API.meInfo,
    {
      schema: { tags, summary: '当前用户信息（含付款账号的现金与赠送金；无财务权限的子账号不含）', response: { 200: userInfoSchema } },
      onRequest: requireAuth,
    },
    // The DTO is built from the session's row; the money fields are the payer's (a child spends its
    // parent's), and a child without the 财务 permission gets none of them.
    async (request) => {
      const user = currentSession(request).user;
      return { ...deps.users.toDto(user), ...(seesPayerFinance(user) ? await deps.gifts.userFields(payerOf(request)) : {}) };
    },
  );

  r.put(
    API.mePassword,
    { schema: { tags, summary: '修改密码（其他登录会话失效）', body: changePasswordSchema, response: { 200: okSchema } }, onRequest: requireOwnCredentials },
    async (request) => {
      const s = currentSession(request);
      await deps.users.changePassword(s.user.id, s.sessionId, request.body);
      return { ok: true as const };
    },
  );

  r.put(
    API.meMobile,
    { schema: { tags, summary: '更换手机号（验证码发往新号码）', body: changeMobileSchema, response: { 200: userSchema } }, onRequest: requireOwnCredentials },
    async (request) => deps.users.changeMobile(currentSession(request).user.id, request.body),
  );

  r.put(
    API.meEmail,
    { schema: { tags, summary: '绑定或更换邮箱', body: changeEmailSchema, response: { 200: userSchema } }, onRequest: requireOwnCredentials },
    async (request) => deps.users.changeEmail(currentSession(request).user.id, request.body),
  );

  r.put(
    API.meLogo,
    {
      schema: {
        tags,
        summary: '上传头像（multipart 字段 file；PNG/JPEG/WEBP/GIF）',
        consumes: ['multipart/form-data'],
        response: { 200: userSchema },
      },
      onRequest: requireAuth,
    },
    async (request) => {
      const image = await readUploadedImage(request, deps.uploadMaxBytes);
      return deps.users.setLogo(currentSession(request).user.id, image);
    },
  );

  // 余额保底: the main account's (a child spends its parent's balance, under the parent's floor).
  r.get(
    API.meBalanceFloor,
    {
      schema: { tags, summary: '余额保底：可用余额低于该金额时自动关闭按量计费实例（null 为未设置）', response: { 200: balanceFloorSchema } },
      onRequest: deps.auth.requireMainAccount,
    },
    async (request) => deps.balanceFloors.get(currentSession(request).user.id),
  );

  r.put(
    API.meBalanceFloor,
    {
      schema: {
        tags,
        summary: '设置余额保底（0–100000 元，单位 0.0001 元的整数字符串；null 关闭）',
        body: balanceFloorSchema,
        response: { 200: balanceFloorSchema },
      },
      onRequest: deps.auth.requireMainAccount,
    },
    async (request) => deps.balanceFloors.set(currentSession(request).user.id, request.body.floor === null ? null : BigInt(request.body.floor)),
  );

  r.get('/files/*', { schema: { tags: ['文件'], summary: '读取已上传的文件', params: fileParamsSchema } }, async (request, reply) => {
    const key = request.params['*'];
    const servable = /^[a-z0-9][a-z0-9/_.-]*$/i.test(key) && !key.includes('..') && !key.startsWith(PRIVATE_FILES);
    const object = servable ? await deps.storage.get(key) : null;
    if (!object) throw new AppError('FILE_NOT_FOUND');
    return reply
      .header('content-type', object.contentType)
      .header('content-length', object.size)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .send(object.body);
  });
}
