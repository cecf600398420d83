import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { API, certifyInfoSchema, enterpriseCertifySchema, personalCertifySchema, REVIEW_IMAGE_MAX_BYTES, payerIdOf } from '@console/contract';
import { currentSession, type AuthGuards } from '../../http/auth.js';
import { readUploadedImage } from '../../http/upload.js';
import type { CertificationService } from './service.js';

const tags = ['实名认证'];

export interface CertificationRoutesDeps {
  auth: AuthGuards;
  certification: CertificationService;
}

export async function certificationRoutes(app: FastifyInstance, deps: CertificationRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { requireMainAccount } = deps.auth;
  const c = deps.certification;
  const me = (req: Parameters<typeof currentSession>[0]) => currentSession(req).user.id;
  const response = { 200: certifyInfoSchema };

  r.get(API.certifyInfo, { schema: { tags, summary: '认证信息（个人与企业申请，已脱敏）', response }, onRequest: deps.auth.requireAuth }, async (req) => {
    const user = currentSession(req).user;
    // A child sees its parent's certification: it acts under the parent's identity.
    return c.info(payerIdOf(user));
  });

  r.post(
    API.certifyPersonal,
    {
      schema: { tags, summary: '提交个人实名信息（姓名、身份证号，先校验格式与校验位）', body: personalCertifySchema, response },
      onRequest: requireMainAccount,
    },
    async (req) => c.submitPersonal(me(req), req.body),
  );
  r.post(API.certifyPersonalConfirm, { schema: { tags, summary: '确认并发起个人实名核验', response }, onRequest: requireMainAccount }, async (req) =>
    c.confirmPersonal(me(req)),
  );
  r.post(
    API.certifyEnterprise,
    {
      schema: { tags, summary: '提交企业认证信息（统一社会信用代码按 GB 32100 校验）', body: enterpriseCertifySchema, response },
      onRequest: requireMainAccount,
    },
    async (req) => c.submitEnterprise(me(req), req.body),
  );
  r.put(
    API.certifyEnterpriseUpload,
    {
      schema: { tags, summary: '上传营业执照（multipart 字段 file；PNG/JPEG/WEBP/GIF，不超过 5 MB）', consumes: ['multipart/form-data'], response },
      onRequest: requireMainAccount,
    },
    async (req) => c.uploadLicence(me(req), await readUploadedImage(req, REVIEW_IMAGE_MAX_BYTES)),
  );
  r.post(API.certifyEnterpriseConfirm, { schema: { tags, summary: '确认提交企业认证，等待运营审核', response }, onRequest: requireMainAccount }, async (req) =>
    c.confirmEnterprise(me(req)),
  );
}
