package io.sparkps.ps;

import io.grpc.ClientInterceptor;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.wire.Internal;

/**
 * For another gRPC service of a run (the training cluster's coordinator): how to speak as the
 * parameter servers do, with the run's token on every call and the run's TLS. The one door to
 * ps-server's security for code outside it.
 */
@Internal
public final class RunChannels {
  private RunChannels() {}

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
