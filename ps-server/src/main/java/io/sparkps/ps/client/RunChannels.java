package io.sparkps.ps.client;

import io.grpc.ClientInterceptor;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.annotation.Internal;
import java.util.concurrent.TimeUnit;

/**
 * How the run's gRPC services speak, the parameter servers' and the training cluster's
 * coordinator's alike: the run's token on every call, the run's TLS, and the limits a server on a
 * shared network keeps. The one door to ps-server's security for code outside it.
 */
@Internal
public final class RunChannels {
  /** Seconds a connection may take to finish its TLS and HTTP/2 handshakes. */
  public static final int HANDSHAKE_SECONDS = 5;
  /** Minutes a connection may stay without calls before the server closes it. */
  public static final int MAX_IDLE_MINUTES = 10;
  /** Calls one connection may have open at once. */
  public static final int MAX_CALLS_PER_CONNECTION = 1024;

  private RunChannels() {}

  /**
   * What a server on a shared network needs: a connection that has not finished its TLS and
   * HTTP/2 handshakes within {@value #HANDSHAKE_SECONDS} s is closed (so idle strangers hold
   * nothing for long); one without calls for {@value #MAX_IDLE_MINUTES} min is closed too (a
   * client reconnects on its next call); keepalive pings more often than clients send them are
   * refused, and so are streams beyond {@value #MAX_CALLS_PER_CONNECTION} per connection.
   */
  public static NettyServerBuilder hardened(NettyServerBuilder builder) {
    return builder.handshakeTimeout(HANDSHAKE_SECONDS, TimeUnit.SECONDS)
        .maxConnectionIdle(MAX_IDLE_MINUTES, TimeUnit.MINUTES)
        .permitKeepAliveTime(Connections.KEEPALIVE_SECONDS / 2, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(true)
        .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION);
  }

  /** Adds the run's token to every call made through a channel. */
  public static ClientInterceptor tokenOnEveryCall(PsToken token) {
    return Auth.client(token);
  }

  /** Rejects, before any handler runs, calls that lack the run's token; {@code serverName} names the server in errors. */
  public static ServerInterceptor requireToken(PsToken token, String serverName) {
    return Auth.server(token, serverName);
  }

  /** Plaintext without {@code tls}; else TLS with the run's certificate pinned and presented. */
  public static NettyChannelBuilder secured(NettyChannelBuilder builder, PsTls tls) {
    return Connections.secured(builder, tls);
  }
}
