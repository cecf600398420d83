import { createPrivateKey, createPublicKey, createSign, createVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateRsaKeyPair, loadPrivateKey, loadPublicKey } from './keys.js';

/** Alipay's key tool prints keys as bare base64, PKCS#1 or PKCS#8 depending on the language chosen. */
describe('merchant key formats', () => {
  const pair = generateRsaKeyPair();
  const priv = createPrivateKey(pair.privateKey);
  const pub = createPublicKey(pair.publicKey);
  const bare = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const forms = {
    'PKCS#8 PEM': pair.privateKey,
    'PKCS#1 PEM': priv.export({ type: 'pkcs1', format: 'pem' }).toString(),
    'bare PKCS#8': bare(pair.privateKey),
    'bare PKCS#1': bare(priv.export({ type: 'pkcs1', format: 'pem' }).toString()),
  };

  for (const [name, text] of Object.entries(forms)) {
    it(`loads a private key given as ${name}`, () => {
      const signature = createSign('RSA-SHA256').update('x').sign(loadPrivateKey(text), 'base64');
      expect(createVerify('RSA-SHA256').update('x').verify(pub, signature, 'base64')).toBe(true);
    });
  }

  it('loads a public key as PEM or bare SPKI base64', () => {
    const signature = createSign('RSA-SHA256').update('x').sign(priv, 'base64');
    for (const text of [pair.publicKey, bare(pair.publicKey)]) {
      expect(createVerify('RSA-SHA256').update('x').verify(loadPublicKey(text), signature, 'base64')).toBe(true);
    }
  });
});
