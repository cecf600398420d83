import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AppError } from '../../http/errors.js';
import { assertSafeKey, type SignedUrlOptions, type StorageDriver, type StoredObject } from './types.js';

export interface S3StorageOptions {
  /** Unset: AWS S3 itself. Aliyun OSS, Tencent COS, MinIO, Ceph RGW: their S3 endpoint, e.g. https://s3.oss-cn-hangzhou.aliyuncs.com (region cn-hangzhou). */
  endpoint?: string;
  /** Where browsers reach the store, when that is not `endpoint` (an in-cluster MinIO): signed URLs are made for this one. */
  publicEndpoint?: string;
  region: string;
  bucket: string;
  /** Unset (both): the SDK's own chain (AWS_* variables, web identity, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** `http://host/bucket/key` instead of `http://bucket.host/key`: MinIO and Ceph RGW without wildcard DNS. */
  forcePathStyle: boolean;
  /** Put before every key, so that one bucket can hold several consoles' files ("console-a/"). */
  prefix?: string;
}

/**
 * Objects in an S3-compatible bucket, so that every console replica reads what any of them wrote.
 * The object's Content-Type is the type given to put. A missing object reads as null; anything else
 * the store refuses (credentials, a missing bucket, the network) is STORAGE_UNAVAILABLE naming what it answered.
 */
export class S3StorageDriver implements StorageDriver {
  readonly name = 's3';
  private readonly client: S3Client;
  private readonly signer: S3Client;
  private readonly prefix: string;

  constructor(private readonly o: S3StorageOptions) {
    const client = (endpoint: string | undefined) =>
      new S3Client({
        endpoint,
        region: o.region,
        credentials: o.credentials,
        forcePathStyle: o.forcePathStyle,
        // The SDK's default CRC checksums on every upload are refused by stores that do not know the
        // new headers (older Ceph RGW and MinIO, some cloud stores' S3 layers): checksums only where S3 requires them.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
    this.client = client(o.endpoint);
    this.signer = o.publicEndpoint && o.publicEndpoint !== o.endpoint ? client(o.publicEndpoint) : this.client;
    this.prefix = o.prefix ? `${o.prefix.replace(/^\/+|\/+$/g, '')}/` : '';
  }

  private key(key: string) {
    assertSafeKey(key);
    return this.prefix + key;
  }

  async put(key: string, body: Buffer, contentType: string) {
    const Key = this.key(key);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.o.bucket, Key, Body: body, ContentType: contentType, ContentLength: body.length }));
    } catch (e) {
      throw storeError('写入', e);
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    const Key = this.key(key);
    let out;
    try {
      out = await this.client.send(new GetObjectCommand({ Bucket: this.o.bucket, Key }));
    } catch (e) {
      if (isMissingObject(e)) return null;
      throw storeError('读取', e);
    }
    const body = out.Body as Readable | undefined;
    if (!body || out.ContentLength === undefined) {
      body?.destroy();
      throw new AppError('STORAGE_UNAVAILABLE', '对象存储的应答缺少内容或长度');
    }
    return {
      body,
      contentType: out.ContentType ?? 'application/octet-stream',
      size: out.ContentLength,
      signedUrl: (o) => this.signedUrl(key, o),
    };
  }

  async delete(key: string) {
    const Key = this.key(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.o.bucket, Key }));
    } catch (e) {
      if (isMissingObject(e)) return;
      throw storeError('删除', e);
    }
  }

  /** A presigned GET (SigV4, computed here: no request to the store), answered with the given headers. */
  async signedUrl(key: string, o: SignedUrlOptions): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.o.bucket,
      Key: this.key(key),
      ResponseContentType: o.contentType,
      ResponseContentDisposition: o.contentDisposition,
    });
    try {
      return await getSignedUrl(this.signer, command, { expiresIn: o.expiresInSeconds });
    } catch (e) {
      throw storeError('签名', e);
    }
  }
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/** NoSuchKey, or a bare 404 (HEAD-like answers without a body); a missing bucket is the operator's error, not a missing file. */
function isMissingObject(e: unknown): boolean {
  const err = e as SdkError;
  if (err.name === 'NoSuchKey' || err.name === 'NotFound') return true;
  return err.$metadata?.httpStatusCode === 404 && err.name !== 'NoSuchBucket';
}

/** What the store answered (its error code and HTTP status, or the network error), for the response's detail and the log. */
function storeError(what: string, e: unknown): AppError {
  const err = e as SdkError;
  const status = err.$metadata?.httpStatusCode;
  const said = [err.name && err.name !== 'Error' ? err.name : err.code, status ? `HTTP ${status}` : null].filter(Boolean).join('，');
  const out = new AppError('STORAGE_UNAVAILABLE', `对象存储${what}失败（${said || err.message || String(e)}）`);
  out.cause = e;
  return out;
}
