/**
 * The S3 server of the deployed test as a process of its own (the replicas reach it over the network,
 * as they would a MinIO or an OSS endpoint): @20minutes/s3rver on a loopback port, its objects under
 * S3_DIR. Prints `{"endpoint":…,"bucket":…}` once it listens; SIGTERM closes it.
 *
 *   S3_DIR=/tmp/x node --import tsx test/deployed/s3-process.ts
 */
import S3rver from '@20minutes/s3rver';

const directory = process.env.S3_DIR;
if (!directory) throw new Error('S3_DIR must name a folder for the objects');
const bucket = process.env.S3_BUCKET ?? 'console';
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  allowMismatchedSignatures: false,
  configureBuckets: [{ name: bucket }],
});
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ endpoint: `http://127.0.0.1:${port}`, bucket })}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
