/**
 * RSA keys as merchants actually receive them: Alipay's key tool prints bare base64 (PKCS#1 or
 * PKCS#8, without PEM armour), WeChat hands out PEM files and platform certificates. Everything
 * is turned into a KeyObject once, at construction, so a bad key fails at start, not mid-payment.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';

export interface RsaKeyPairPem {
  /** PKCS#8 PEM. */
  privateKey: string;
  /** SPKI PEM. */
  publicKey: string;
}

export function generateRsaKeyPair(): RsaKeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function derBytes(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'base64');
}

/** A private key from PEM, or from bare base64 DER in PKCS#8 or PKCS#1 form. */
export function loadPrivateKey(text: string | KeyObject): KeyObject {
  if (typeof text !== 'string') return text;
  if (text.includes('-----BEGIN')) return createPrivateKey(text);
  try {
    return createPrivateKey({ key: derBytes(text), format: 'der', type: 'pkcs8' });
  } catch {
    return createPrivateKey({ key: derBytes(text), format: 'der', type: 'pkcs1' });
  }
}

/** A public key from PEM (SPKI or PKCS#1), an X.509 certificate PEM, or bare base64 SPKI DER. */
export function loadPublicKey(text: string | KeyObject): KeyObject {
  if (typeof text !== 'string') return text;
  if (text.includes('BEGIN CERTIFICATE')) return new X509Certificate(text).publicKey;
  if (text.includes('-----BEGIN')) return createPublicKey(text);
  return createPublicKey({ key: derBytes(text), format: 'der', type: 'spki' });
}

export function pkcs8Pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

export function spkiPem(key: KeyObject): string {
  return key.export({ type: 'spki', format: 'pem' }).toString();
}
