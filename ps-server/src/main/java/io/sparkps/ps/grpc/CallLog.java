package io.sparkps.ps.grpc;

import io.grpc.ForwardingServerCall;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.sparkps.ps.annotation.Internal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs a ps's gRPC calls as they end: each one at DEBUG (method, caller, status, milliseconds),
 * and at WARN those that ended in the server's own failure (INTERNAL, UNKNOWN, DATA_LOSS), which
 * the caller also sees as an error. Refusals of bad input, timeouts and cancellations are the
 * caller's to report. Logger {@code io.sparkps.ps.grpc.CallLog}.
 */
@Internal
public final class CallLog implements ServerInterceptor {
  private static final Logger LOG = LoggerFactory.getLogger(CallLog.class);
  private final String server;

  /** Logs the calls of {@code server} (e.g. "ps 0"). */
  public CallLog(String server) {
    this.server = server;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    long started = System.nanoTime();
    return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
      @Override
      public void close(Status status, Metadata trailers) {
        ended(call, status, (System.nanoTime() - started) / 1_000_000);
        super.close(status, trailers);
      }
    }, headers);
  }

  private void ended(ServerCall<?, ?> call, Status status, long millis) {
    boolean failed = status.getCode() == Status.Code.INTERNAL || status.getCode() == Status.Code.UNKNOWN
        || status.getCode() == Status.Code.DATA_LOSS;
    if (failed) {
      LOG.warn("{}: {} from {} failed after {} ms: {} {}", server, call.getMethodDescriptor().getBareMethodName(),
          call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), millis, status.getCode(),
          status.getDescription(), status.getCause());
    } else if (LOG.isDebugEnabled()) {
      LOG.debug("{}: {} from {} ended {} in {} ms{}", server, call.getMethodDescriptor().getBareMethodName(),
          call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), status.getCode(), millis,
          status.getDescription() == null ? "" : ": " + status.getDescription());
    }
  }
}
