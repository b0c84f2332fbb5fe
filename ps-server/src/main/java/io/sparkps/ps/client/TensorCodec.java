package io.sparkps.ps.client;

import io.sparkps.ps.grpc.Frame;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.wire.FiniteCheck;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * Moves ND4J arrays into and out of frames through their {@code data().asNio()} views: no
 * per-element conversion and no {@code float[]} copies on the client.
 */
final class TensorCodec {
  private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[1 << 14]);

  private TensorCodec() {}

  /** One stretch of one variable's elements and the bytes that hold them. */
  record Piece(String name, long offset, List<Long> rows, ByteBuffer bytes) {
    int floats() {
      return bytes.remaining() / 4;
    }
  }

  /** Whether {@code a} is float32 and laid out in 'c' order without gaps (so its bytes can be used as they are). */
  static boolean isDenseFloat(INDArray a) {
    if (a.dataType() != DataType.FLOAT) {
      return false;
    }
    long[] shape = a.shape();
    long[] stride = a.stride();
    long expected = 1;
    for (int d = shape.length - 1; d >= 0; d--) {
      if (shape[d] != 1 && stride[d] != expected) {
        return false;
      }
      expected *= shape[d];
    }
    return true;
  }

  /** {@code a} as dense float32 'c' order: itself when it already is, else a copy. */
  static INDArray dense(INDArray a) {
    if (isDenseFloat(a)) {
      return a;
    }
    INDArray f = a.dataType() == DataType.FLOAT ? a : a.castTo(DataType.FLOAT);
    return isDenseFloat(f) ? f : f.dup('c');
  }

  /** The little-endian bytes of a dense float array's elements. */
  static ByteBuffer bytes(INDArray a) {
    ByteBuffer b = a.data().asNio().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int start = (int) (a.offset() * 4);
    b.limit(start + (int) a.length() * 4).position(start);
    return b.slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The bytes of elements {@code [from, from + n)} of {@code whole}. */
  static ByteBuffer range(ByteBuffer whole, long from, long n) {
    ByteBuffer b = whole.duplicate();
    b.limit((int) ((from + n) * 4)).position((int) (from * 4));
    return b.slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Index of the first NaN or infinite value, or -1; reads through a small array the JIT can vectorize. */
  static long firstNonFinite(ByteBuffer bytes) {
    FloatBuffer f = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    float[] scratch = SCRATCH.get();
    for (long done = 0; f.hasRemaining(); ) {
      int n = Math.min(scratch.length, f.remaining());
      f.get(scratch, 0, n);
      int bad = FiniteCheck.firstNonFinite(scratch, 0, n);
      if (bad >= 0) {
        return done + bad;
      }
      done += n;
    }
    return -1;
  }

  /** Packs pieces into frames of at most {@code chunkBytes} of payload, splitting dense pieces as needed. */
  static List<Frame> frames(FrameHeader template, List<Piece> pieces, int chunkBytes) {
    return frames(template, pieces, chunkBytes, 0);
  }

  /** {@link #frames(FrameHeader, List, int)} with every segment carrying {@code version} (for RESTORE). */
  static List<Frame> frames(FrameHeader template, List<Piece> pieces, int chunkBytes, long version) {
    int maxFloats = Math.max(1, chunkBytes / 4);
    List<Frame> frames = new ArrayList<>();
    FrameHeader.Builder header = template.toBuilder().clearSegments();
    List<ByteBuffer> parts = new ArrayList<>();
    int floats = 0;
    for (Piece p : pieces) {
      int done = 0;
      int total = p.floats();
      do {
        int room = maxFloats - floats;
        if (room == 0 || (!p.rows().isEmpty() && floats > 0 && total > room)) {
          frames.add(Frame.ofBytes(header.build(), parts));
          header = template.toBuilder().clearSegments();
          parts = new ArrayList<>();
          floats = 0;
          room = maxFloats;
        }
        int take = p.rows().isEmpty() ? Math.min(total - done, room) : total;
        header.addSegments(Segment.newBuilder().setName(p.name()).setOffset(p.offset() + done)
            .setCount(take).addAllRows(p.rows()).setVersion(version));
        parts.add(range(p.bytes(), done, take));
        floats += take;
        done += take;
      } while (done < total);
    }
    if (header.getSegmentsCount() > 0 || frames.isEmpty()) {
      frames.add(Frame.ofBytes(header.build(), parts));
    }
    return frames;
  }

  static String shape(long[] shape) {
    return Arrays.toString(shape);
  }
}
