/**
 * The error envelope of DESIGN.md, implemented once: every failure leaves the server as
 * `{ code, message, detail? }` with the HTTP status its code starts with.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ERRORS, httpStatusOf, isApiPath, type ErrorBody, type ErrorName } from '@console/contract';

/** A domain error: thrown anywhere, answered by the one handler below. */
export class AppError extends Error {
  readonly code: number;
  readonly status: number;
  constructor(
    readonly name_: ErrorName,
    readonly detail?: string,
  ) {
    super(ERRORS[name_].message + (detail ? `：${detail}` : ''));
    this.code = ERRORS[name_].code;
    this.status = httpStatusOf(this.code);
  }
  /** Whether this is the catalogue's error `name` (compare by name, never by the number). */
  is(name: ErrorName): boolean {
    return this.name_ === name;
  }
  body(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: ERRORS[this.name_].message };
    if (this.detail) body.detail = this.detail;
    return body;
  }
}

/** Fastify's own client errors, by their code, mapped onto the catalogue. */
const FASTIFY_CODES: Record<string, ErrorName> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_JSON',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_REQ_FILE_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_FILES_LIMIT: 'PAYLOAD_TOO_LARGE',
  FST_PARTS_LIMIT: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA',
  FST_INVALID_MULTIPART_CONTENT_TYPE: 'UNSUPPORTED_MEDIA',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'VALIDATION_FAILED',
};

/**
 * A multipart body cut short or without its boundary: busboy (under @fastify/multipart) throws plain
 * errors with no code, known by their words.
 */
const BUSBOY_MESSAGES =
  /^(Unexpected end of (multipart data|form)|Multipart: Boundary not found|Malformed part header|Part terminated early|Unexpected end of file)/;

/** Whether `e` is the catalogue's error `name`. */
export function isAppError(e: unknown, name: ErrorName): e is AppError {
  return e instanceof AppError && e.is(name);
}

export function toAppError(error: FastifyError | Error): AppError | null {
  if (error instanceof AppError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0]!;
    const field = first.instancePath.replace(/^\//, '').replace(/\//g, '.') || (error.validationContext ?? 'body');
    return new AppError('VALIDATION_FAILED', `${field}：${first.message}`);
  }
  const code = (error as FastifyError).code;
  if (code && FASTIFY_CODES[code]) return new AppError(FASTIFY_CODES[code]);
  if (!code && BUSBOY_MESSAGES.test(error.message)) return new AppError('UPLOAD_MALFORMED');
  const status = (error as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) return new AppError('VALIDATION_FAILED', error.message);
  return null;
}

export function registerErrorHandling(app: FastifyInstance, serveApp: (req: FastifyRequest, reply: FastifyReply) => unknown) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = toAppError(error);
    if (known) {
      if (known.status >= 500) request.log.error({ err: error }, 'request failed');
      return reply.status(known.status).send(known.body());
    }
    request.log.error({ err: error, reqId: request.id }, 'unexpected error');
    const body: ErrorBody = { code: ERRORS.INTERNAL.code, message: ERRORS.INTERNAL.message, detail: `请求编号 ${request.id}` };
    return reply.status(500).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    if (!isApiPath(request.url) && (request.method === 'GET' || request.method === 'HEAD')) {
      return serveApp(request, reply);
    }
    const err = new AppError('NOT_FOUND', `${request.method} ${request.url.split('?')[0]}`);
    return reply.status(404).send(err.body());
  });
}
