package io.sparkps.ps.grpc;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.wire.FiniteCheck;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Marshals {@link Frame}s as {@code [u32 header length][header][payload]}, writing the payload
 * straight from its sources and reading it straight into its destination (see
 * {@link PayloadReader}).
 */
@Internal
public final class FrameMarshaller implements MethodDescriptor.Marshaller<Frame> {
  /** Where a received payload goes; returns the frame handed to the call. */
  public interface Sink {
    Frame accept(FrameHeader header, PayloadReader payload, int payloadBytes) throws IOException;
  }

  private static final ThreadLocal<ByteBuffer> SCRATCH =
      ThreadLocal.withInitial(() -> ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN));

  private final Sink sink;
  private final boolean lenient;

  public FrameMarshaller(Sink sink) {
    this(sink, false);
  }

  /** With {@code lenient}, a malformed message parses to a {@link Frame#malformed} frame instead of throwing. */
  FrameMarshaller(Sink sink, boolean lenient) {
    this.sink = sink;
    this.lenient = lenient;
  }

  /** A marshaller that decodes payloads into arrays taken from {@code pool}. */
  static FrameMarshaller pooled(FloatPool pool) {
    return new FrameMarshaller((header, payload, bytes) -> {
      int n = bytes / 4;
      float[] data = pool.take(n);
      payload.readFloats(data, 0, n);
      return Frame.checked(header, data, n, FiniteCheck.firstNonFinite(data, 0, n));
    }, true);
  }

  @Override
  public InputStream stream(Frame frame) {
    return new FrameStream(frame);
  }

  @Override
  public Frame parse(InputStream in) {
    try {
      if (in instanceof FrameStream local && local.isUnread()) {
        Frame f = local.frame;
        return sink.accept(f.header(), PayloadReader.of(f), f.payloadBytes());
      }
      DataInputStream data = new DataInputStream(in);
      int headerLength = data.readInt();
      int total = in.available();
      if (headerLength < 0 || headerLength > total) {
        throw new IOException("header_length " + headerLength + " is outside the frame's " + total
            + " bytes (field header_length)");
      }
      byte[] headerBytes = new byte[headerLength];
      data.readFully(headerBytes);
      FrameHeader header;
      try {
        header = FrameHeader.parseFrom(headerBytes);
      } catch (com.google.protobuf.InvalidProtocolBufferException e) {
        throw new IOException("frame header does not parse: " + e.getMessage() + " (field header)", e);
      }
      int payloadBytes = total - headerLength;
      if (payloadBytes % 4 != 0 || payloadBytes < 0) {
        throw new IOException("payload of " + payloadBytes + " bytes is not whole float32 values (field payload)");
      }
      return sink.accept(header, PayloadReader.of(in), payloadBytes);
    } catch (IOException e) {
      if (lenient) {
        return Frame.malformed("malformed SparkPS frame: " + e.getMessage());
      }
      throw Status.INVALID_ARGUMENT.withDescription("malformed SparkPS frame: " + e.getMessage())
          .withCause(e).asRuntimeException();
    }
  }

  /** A frame on its way out: drains header and payload into the transport's buffers. */
  static final class FrameStream extends InputStream implements Drainable, KnownLength {
    private final Frame frame;
    private final byte[] header;
    private InputStream materialized;
    private boolean drained;

    FrameStream(Frame frame) {
      this.frame = frame;
      this.header = frame.header().toByteArray();
    }

    boolean isUnread() {
      return !drained && materialized == null;
    }

    @Override
    public int drainTo(OutputStream out) throws IOException {
      if (!isUnread()) {
        return (int) materialized().transferTo(out);
      }
      drained = true;
      writeInt(out, header.length);
      out.write(header);
      ByteBuffer scratch = SCRATCH.get();
      for (FloatRange r : frame.floatParts()) {
        for (int done = 0; done < r.length(); ) {
          int k = Math.min(r.length() - done, scratch.capacity() / 4);
          scratch.clear();
          scratch.asFloatBuffer().put(r.array(), r.offset() + done, k);
          out.write(scratch.array(), 0, k * 4);
          done += k;
        }
      }
      for (ByteBuffer part : frame.byteParts()) {
        ByteBuffer src = part.duplicate();
        while (src.hasRemaining()) {
          int k = Math.min(src.remaining(), scratch.capacity());
          src.get(scratch.array(), 0, k);
          out.write(scratch.array(), 0, k);
        }
      }
      return 4 + header.length + frame.payloadBytes();
    }

    private static void writeInt(OutputStream out, int v) throws IOException {
      out.write(v >>> 24);
      out.write(v >>> 16);
      out.write(v >>> 8);
      out.write(v);
    }

    @Override
    public int available() throws IOException {
      if (isUnread()) {
        return 4 + header.length + frame.payloadBytes();
      }
      return drained && materialized == null ? 0 : materialized.available();
    }

    @Override
    public int read() throws IOException {
      return materialized().read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return materialized().read(b, off, len);
    }

    /** The fallback for transports that read rather than drain: the frame as bytes. */
    private InputStream materialized() throws IOException {
      if (materialized == null) {
        if (drained) {
          return InputStream.nullInputStream();
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(available());
        drainTo(bytes);
        materialized = new java.io.ByteArrayInputStream(bytes.toByteArray());
      }
      return materialized;
    }
  }
}
