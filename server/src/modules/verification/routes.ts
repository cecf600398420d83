import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, codeSentSchema, emailCodeRequestSchema, outboxQuerySchema, outboxResponseSchema, smsCodeRequestSchema } from '@console/contract';
import { readOutbox } from '../../drivers/outbox.js';
import { AppError } from '../../http/errors.js';
import type { AppContext } from '../../context.js';

export async function verificationRoutes(app: FastifyInstance, ctx: AppContext) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post(
    API.smsCode,
    {
      schema: { tags: ['账号'], summary: '发送短信验证码', body: smsCodeRequestSchema, response: { 200: codeSentSchema } },
      onRequest: ctx.auth.optionalAuth,
    },
    async (request) => {
      const { mobile, scene } = request.body;
      // Binding a new number belongs to a logged-in account.
      if (scene === 'mobile' && !request.session) throw new AppError('UNAUTHENTICATED');
      if (scene === 'mobile') ctx.users.assertOwnsCredentials(request.session!.user);
      await ctx.users.assertSmsSceneAllowed(mobile, scene);
      return ctx.codes.sendSms(mobile, scene, request.ip);
    },
  );

  r.post(
    API.emailCode,
    {
      schema: { tags: ['账号'], summary: '发送邮箱验证码', body: emailCodeRequestSchema, response: { 200: codeSentSchema } },
      onRequest: ctx.auth.requireAuth,
    },
    async (request) => {
      ctx.users.assertOwnsCredentials(request.session!.user);
      await ctx.users.assertEmailFree(request.body.email, request.session!.user.id);
      return ctx.codes.sendEmail(request.body.email, request.body.scene, request.ip);
    },
  );

  // A dev tool (config.ts decides): off, the path does not exist.
  if (!ctx.config.devTools) return;
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
      if (!ctx.drivers.sms.embedded || !ctx.drivers.mail.embedded) throw new AppError('DEV_ONLY');
      return { items: await readOutbox(ctx.db, request.query.to.toLowerCase()) };
    },
  );
}
