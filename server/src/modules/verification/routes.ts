import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, codeSentSchema, emailCodeRequestSchema, outboxQuerySchema, outboxResponseSchema, smsCodeRequestSchema } from '@console/contract';
import { readOutbox } from '../../drivers/outbox.js';
import { AppError } from '../../http/errors.js';
import type { Db } from '../../db/client.js';
import type { MailDriver } from '../../drivers/mail/types.js';
import type { SmsDriver } from '../../drivers/sms/types.js';
import type { AuthGuards } from '../../http/auth.js';
import type { VerificationService } from './service.js';

/** The account checks before a code goes out: the users module's, which sits above verification (it checks codes). */
export interface CodeRecipients {
  assertOwnsCredentials(user: { isChild: boolean }): void;
  assertSmsSceneAllowed(mobile: string, scene: string): Promise<void>;
  assertEmailFree(email: string, userId?: string): Promise<void>;
}

export interface VerificationRoutesDeps {
  auth: AuthGuards;
  codes: VerificationService;
  users: CodeRecipients;
  db: Db;
  sms: SmsDriver;
  mail: MailDriver;
  /** /dev/outbox exists only with the dev tools on (config.ts decides). */
  devTools: boolean;
}

export async function verificationRoutes(app: FastifyInstance, deps: VerificationRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post(
    API.smsCode,
    {
      schema: { tags: ['账号'], summary: '发送短信验证码', body: smsCodeRequestSchema, response: { 200: codeSentSchema } },
      onRequest: deps.auth.optionalAuth,
    },
    async (request) => {
      const { mobile, scene } = request.body;
      // Binding a new number belongs to a logged-in account.
      if (scene === 'mobile' && !request.session) throw new AppError('UNAUTHENTICATED');
      if (scene === 'mobile') deps.users.assertOwnsCredentials(request.session!.user);
      await deps.users.assertSmsSceneAllowed(mobile, scene);
      return deps.codes.sendSms(mobile, scene, request.ip);
    },
  );

  r.post(
    API.emailCode,
    {
      schema: { tags: ['账号'], summary: '发送邮箱验证码', body: emailCodeRequestSchema, response: { 200: codeSentSchema } },
      onRequest: deps.auth.requireAuth,
    },
    async (request) => {
      deps.users.assertOwnsCredentials(request.session!.user);
      await deps.users.assertEmailFree(request.body.email, request.session!.user.id);
      return deps.codes.sendEmail(request.body.email, request.body.scene, request.ip);
    },
  );

  // A dev tool (config.ts decides): off, the path does not exist.
  if (!deps.devTools) return;
  r.get(
    API.devOutbox,
    {
      schema: {
        tags: ['开发'],
        summary: '内置发件箱（仅在内置短信/邮件驱动下可用）',
        querystring: outboxQuerySchema,
        response: { 200: outboxResponseSchema },
      },
    },
    async (request) => {
      // Off as soon as either real driver is configured: a production server never shows codes.
      if (!deps.sms.embedded || !deps.mail.embedded) throw new AppError('DEV_ONLY');
      return { items: await readOutbox(deps.db, request.query.to.toLowerCase()) };
    },
  );
}
