import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  codeSentSchema,
  REVIEW_IMAGE_MAX_BYTES,
  studentEmailCodeSchema,
  studentVerificationRequestSchema,
  studentVerificationSchema,
} from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import { clientMeta } from '../../http/client-meta.js';
import { readUploadedImage } from '../../http/upload.js';
import type { StudentService } from './service.js';

const tags = ['学生认证'];

export interface StudentRoutesDeps {
  auth: AuthGuards;
  students: StudentService;
}

export async function studentRoutes(app: FastifyInstance, deps: StudentRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireMainAccount } = deps.auth;
  const me = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user.id;
  const response = { 200: studentVerificationSchema };

  r.get(API.student, { schema: { tags, summary: '学生认证状态与学生价折扣', response }, onRequest: requireMainAccount }, async (req) =>
    deps.students.get(me(req)),
  );
  r.post(
    API.studentEmailCode,
    { schema: { tags, summary: '向学校邮箱发送验证码', body: studentEmailCodeSchema, response: { 200: codeSentSchema } }, onRequest: requireMainAccount },
    async (req) => deps.students.sendEmailCode(me(req), req.body.email, clientMeta(req).ip),
  );
  r.put(
    API.studentImage,
    {
      schema: { tags, summary: '上传学生证照片（multipart 字段 file，不超过 5 MB）', consumes: ['multipart/form-data'], response },
      onRequest: requireMainAccount,
    },
    async (req) => deps.students.uploadImage(me(req), await readUploadedImage(req, REVIEW_IMAGE_MAX_BYTES)),
  );
  r.post(
    API.student,
    {
      schema: { tags, summary: '提交学生认证（学校、学历、入学与毕业年份、学校邮箱验证码）', body: studentVerificationRequestSchema, response },
      onRequest: requireMainAccount,
    },
    async (req) => deps.students.submit(me(req), req.body),
  );
}
