package io.sparkps.ps.tls;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Writes a self-signed X.509 v3 certificate for an EC P-256 key, in DER, with the JDK alone (it
 * has no public API for it, and a library for this one job would be one more jar to clash on
 * executors' class paths). The certificate names {@code CN=<name>} as subject and issuer and
 * carries {@code name} as its one DNS subject alternative name, which is what TLS clients verify.
 */
final class SelfSignedCertificate {
  private static final byte[] ECDSA_WITH_SHA256 = {0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x04, 0x03, 0x02};
  private static final byte[] COMMON_NAME = {0x55, 0x04, 0x03};
  private static final byte[] SUBJECT_ALT_NAME = {0x55, 0x1d, 0x11};
  private static final DateTimeFormatter UTC_TIME = DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);

  private SelfSignedCertificate() {}

  /** The certificate of {@code keys}, valid from {@code notBefore} until {@code notAfter} (before 2050). */
  static X509Certificate create(KeyPair keys, String name, Instant notBefore, Instant notAfter, SecureRandom random)
      throws GeneralSecurityException {
    byte[] serial = new byte[16];
    random.nextBytes(serial);
    serial[0] &= 0x7f; // positive
    serial[0] |= 0x40; // and without leading zero octets
    byte[] algorithm = sequence(tlv(0x06, ECDSA_WITH_SHA256));
    byte[] subject = sequence(set(sequence(tlv(0x06, COMMON_NAME), tlv(0x0c, name.getBytes(StandardCharsets.UTF_8)))));
    byte[] validity = sequence(utcTime(notBefore), utcTime(notAfter));
    byte[] altName = sequence(tlv(0x82, name.getBytes(StandardCharsets.US_ASCII))); // [2] IMPLICIT dNSName
    byte[] extensions = tlv(0xa3, sequence(sequence(tlv(0x06, SUBJECT_ALT_NAME), tlv(0x04, altName))));
    byte[] tbs = sequence(tlv(0xa0, tlv(0x02, new byte[] {2})), tlv(0x02, new BigInteger(serial).toByteArray()),
        algorithm, subject, validity, subject, keys.getPublic().getEncoded(), extensions);
    Signature signer = Signature.getInstance("SHA256withECDSA");
    signer.initSign(keys.getPrivate(), random);
    signer.update(tbs);
    byte[] signature = signer.sign();
    byte[] bits = new byte[signature.length + 1]; // BIT STRING: no unused bits
    System.arraycopy(signature, 0, bits, 1, signature.length);
    byte[] der = sequence(tbs, algorithm, tlv(0x03, bits));
    X509Certificate cert = (X509Certificate) CertificateFactory.getInstance("X.509")
        .generateCertificate(new ByteArrayInputStream(der));
    cert.verify(keys.getPublic());
    return cert;
  }

  private static byte[] utcTime(Instant t) {
    if (t.isAfter(Instant.parse("2049-12-31T23:59:59Z"))) {
      throw new IllegalArgumentException("UTCTime ends in 2049, got " + t);
    }
    return tlv(0x17, UTC_TIME.format(t).getBytes(StandardCharsets.US_ASCII));
  }

  private static byte[] sequence(byte[]... parts) {
    return tlv(0x30, concat(parts));
  }

  private static byte[] set(byte[]... parts) {
    return tlv(0x31, concat(parts));
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  /** One DER element: tag, definite length, contents. */
  private static byte[] tlv(int tag, byte[] contents) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(contents.length + 6);
    out.write(tag);
    int n = contents.length;
    if (n < 0x80) {
      out.write(n);
    } else {
      int octets = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;
      out.write(0x80 | octets);
      for (int i = octets - 1; i >= 0; i--) {
        out.write(n >>> (8 * i));
      }
    }
    out.writeBytes(contents);
    return out.toByteArray();
  }
}
