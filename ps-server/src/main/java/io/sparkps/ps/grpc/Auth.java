package io.sparkps.ps.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.annotation.Internal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/** The run's shared secret on every call: added by clients, checked by servers. Never logged. */
@Internal
public final class Auth {
  static final Metadata.Key<String> TOKEN = Metadata.Key.of("sparkps-token", Metadata.ASCII_STRING_MARSHALLER);

  private Auth() {}

  /** Adds the token to every call made through a channel. */
  public static ClientInterceptor client(PsToken token) {
    String secret = token.secret();
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            headers.put(TOKEN, secret);
            super.start(listener, headers);
          }
        };
      }
    };
  }

  /** Rejects calls without the token, in constant time, before any handler runs. */
  public static ServerInterceptor server(PsToken token, String serverName) {
    byte[] expected = token.secret().getBytes(StandardCharsets.US_ASCII);
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String given = headers.get(TOKEN);
        byte[] actual = given == null ? new byte[0] : given.getBytes(StandardCharsets.US_ASCII);
        if (!MessageDigest.isEqual(expected, actual)) {
          call.close(Status.UNAUTHENTICATED.withDescription((given == null ? "no SparkPS token" : "wrong SparkPS token")
              + " on a call to " + serverName + ": it accepts calls only from tasks of its own run "
              + "(pass the run's PsToken to the client)"), new Metadata());
          return new ServerCall.Listener<>() {};
        }
        return next.startCall(call, headers);
      }
    };
  }
}
