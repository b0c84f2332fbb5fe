package io.sparkps.ps.testing;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Calls any gRPC method by name with raw bytes, as a client past SparkPS's own would. */
public final class RawCalls {
  /** Passes bytes through as they are. */
  public static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }
  };

  private RawCalls() {}

  /** Sends {@code body} once to method {@code fullName} of type {@code type}; returns the status the call closed with. */
  public static Status call(Channel channel, String fullName, MethodDescriptor.MethodType type, byte[] body)
      throws Exception {
    MethodDescriptor<byte[], byte[]> method = MethodDescriptor.<byte[], byte[]>newBuilder().setType(type)
        .setFullMethodName(fullName).setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
    ClientCall<byte[], byte[]> call = channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    CompletableFuture<Status> closed = new CompletableFuture<>();
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        closed.complete(status);
      }
    }, new Metadata());
    call.request(Integer.MAX_VALUE);
    call.sendMessage(body);
    call.halfClose();
    return closed.get(15, TimeUnit.SECONDS);
  }
}
