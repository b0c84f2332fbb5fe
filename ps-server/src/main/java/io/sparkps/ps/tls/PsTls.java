package io.sparkps.ps.tls;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.sparkps.ps.annotation.Internal;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.nio.channels.SocketChannel;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

/**
 * The TLS identity of one run: a fresh EC P-256 key and its self-signed certificate, made by the
 * driver and shipped to the run's tasks the way its token travels. Every SparkPS channel of the
 * run (ps gRPC, ps bulk port, coordinator) uses TLS 1.3 with this one certificate on both ends:
 * servers present it and require it of clients, and clients trust nothing else (pinned). A peer
 * that does not hold the run's key cannot complete a handshake, let alone see the token.
 *
 * <p>{@link #toString()} never shows the key.
 */
public final class PsTls implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The name in the certificate, which clients verify in place of a host name. */
  public static final String AUTHORITY = "sparkps";
  private static final String[] PROTOCOLS = {"TLSv1.3"};

  private final byte[] certificate;
  private final byte[] privateKey;
  private transient volatile Contexts contexts;

  private PsTls(byte[] certificate, byte[] privateKey) {
    this.certificate = certificate;
    this.privateKey = privateKey;
  }

  /** A fresh key and certificate, valid from a day ago (clock skew between hosts) for 400 days. */
  public static PsTls generate() {
    try {
      SecureRandom random = new SecureRandom();
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(new ECGenParameterSpec("secp256r1"), random);
      KeyPair keys = generator.generateKeyPair();
      Instant now = Instant.now();
      X509Certificate cert = SelfSignedCertificate.create(keys, AUTHORITY, now.minus(Duration.ofDays(1)),
          now.plus(Duration.ofDays(400)), random);
      return new PsTls(cert.getEncoded(), keys.getPrivate().getEncoded());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("could not make the run's TLS key and certificate: " + e, e);
    }
  }

  /** The run's certificate. */
  public X509Certificate certificate() {
    try {
      return (X509Certificate) CertificateFactory.getInstance("X.509")
          .generateCertificate(new ByteArrayInputStream(certificate));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the run's TLS certificate does not parse: " + e, e);
    }
  }

  private PrivateKey key() {
    try {
      return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(privateKey));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the run's TLS key does not parse: " + e, e);
    }
  }

  /** SHA-256 of the certificate, in hex: safe to log, and what a client pins. */
  public String fingerprint() {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(certificate));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The TLS implementation in use: {@code "OpenSSL"} (BoringSSL, shipped with gRPC) when it loads, else {@code "JDK"}. */
  public static String provider() {
    return io.grpc.netty.shaded.io.netty.handler.ssl.OpenSsl.isAvailable() ? "OpenSSL" : "JDK";
  }

  /** For a gRPC server (HTTP/2 over TLS, client certificate required). */
  @Internal
  public SslContext grpcServer() {
    return contexts().grpcServer;
  }

  /** For a gRPC channel; set its authority to {@link #AUTHORITY}. */
  @Internal
  public SslContext grpcClient() {
    return contexts().grpcClient;
  }

  /** The server end of a bulk connection: handshakes on {@code ch} (blocking) and returns the encrypted channel. */
  @Internal
  public TlsChannel acceptBulk(SocketChannel ch) throws IOException {
    SSLEngine engine = contexts().bulkServer.newEngine(ByteBufAllocator.DEFAULT);
    return TlsChannel.handshake(ch, engine);
  }

  /** The client end of a bulk connection. */
  @Internal
  public TlsChannel connectBulk(SocketChannel ch) throws IOException {
    SSLEngine engine = contexts().bulkClient.newEngine(ByteBufAllocator.DEFAULT, AUTHORITY, 443);
    SSLParameters parameters = engine.getSSLParameters();
    parameters.setEndpointIdentificationAlgorithm("HTTPS");
    engine.setSSLParameters(parameters);
    return TlsChannel.handshake(ch, engine);
  }

  private Contexts contexts() {
    Contexts c = contexts;
    if (c == null) {
      synchronized (this) {
        if (contexts == null) {
          contexts = new Contexts(key(), certificate());
        }
        c = contexts;
      }
    }
    return c;
  }

  /** Netty's contexts (OpenSSL when its native library loads, else the JDK's), made once per JVM. */
  private static final class Contexts {
    final SslContext grpcServer;
    final SslContext grpcClient;
    final SslContext bulkServer;
    final SslContext bulkClient;

    Contexts(PrivateKey key, X509Certificate cert) {
      try {
        grpcServer = GrpcSslContexts.configure(server(key, cert)).build();
        grpcClient = GrpcSslContexts.configure(client(key, cert)).build();
        bulkServer = server(key, cert).build();
        bulkClient = client(key, cert).build();
      } catch (SSLException e) {
        throw new IllegalStateException("could not set up TLS with the run's certificate: " + e, e);
      }
    }

    private static SslContextBuilder server(PrivateKey key, X509Certificate cert) {
      return SslContextBuilder.forServer(key, cert).trustManager(cert).clientAuth(ClientAuth.REQUIRE).protocols(PROTOCOLS);
    }

    private static SslContextBuilder client(PrivateKey key, X509Certificate cert) {
      return SslContextBuilder.forClient().keyManager(key, cert).trustManager(cert).protocols(PROTOCOLS);
    }
  }

  @Override
  public String toString() {
    return "PsTls(certificate " + fingerprint().substring(0, 16) + "..., key redacted)";
  }
}
