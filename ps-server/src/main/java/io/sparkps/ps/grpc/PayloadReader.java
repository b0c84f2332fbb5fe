package io.sparkps.ps.grpc;

import io.grpc.HasByteBuffer;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * Reads a frame's payload into its destination with one copy: from the transport's own buffers
 * when the stream exposes them ({@link HasByteBuffer}), from the sender's parts when the frame
 * never left the process, or through a small scratch array otherwise.
 */
@Internal
public abstract class PayloadReader {
  private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[1 << 16]);

  /** Reads {@code n} floats into {@code dst[off..]}. */
  public abstract void readFloats(float[] dst, int off, int n) throws IOException;

  /** Fills {@code dst}'s remaining bytes (little-endian floats). */
  public abstract void readBytes(ByteBuffer dst) throws IOException;

  static PayloadReader of(InputStream in) {
    return new StreamReader(in);
  }

  static PayloadReader of(Frame frame) {
    return new PartsReader(frame);
  }

  /** From a transport stream. */
  private static final class StreamReader extends PayloadReader {
    private final InputStream in;
    private final HasByteBuffer buffers;

    StreamReader(InputStream in) {
      this.in = in;
      this.buffers = in instanceof HasByteBuffer hb && hb.byteBufferSupported() ? hb : null;
    }

    @Override
    public void readFloats(float[] dst, int off, int n) throws IOException {
      int done = 0;
      while (done < n) {
        ByteBuffer bb = buffers == null ? null : buffers.getByteBuffer();
        int whole = bb == null ? 0 : Math.min(bb.remaining() / 4, n - done);
        if (whole > 0) {
          bb.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(dst, off + done, whole);
          skipFully(whole * 4L);
          done += whole;
        } else {
          done += readThroughScratch(dst, off + done, n - done);
        }
      }
    }

    /** Reads at least one float (up to the scratch size) through the scratch array. */
    private int readThroughScratch(float[] dst, int off, int n) throws IOException {
      byte[] scratch = SCRATCH.get();
      int k = buffers == null ? Math.min(n, scratch.length / 4) : 1;
      if (in.readNBytes(scratch, 0, k * 4) != k * 4) {
        throw new EOFException("frame payload ended early");
      }
      ByteBuffer.wrap(scratch, 0, k * 4).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(dst, off, k);
      return k;
    }

    @Override
    public void readBytes(ByteBuffer dst) throws IOException {
      while (dst.hasRemaining()) {
        ByteBuffer bb = buffers == null ? null : buffers.getByteBuffer();
        if (bb != null && bb.hasRemaining()) {
          int k = Math.min(bb.remaining(), dst.remaining());
          bb.limit(bb.position() + k);
          dst.put(bb);
          skipFully(k);
        } else {
          byte[] scratch = SCRATCH.get();
          int k = Math.min(scratch.length, dst.remaining());
          if (in.readNBytes(scratch, 0, k) != k) {
            throw new EOFException("frame payload ended early");
          }
          dst.put(scratch, 0, k);
        }
      }
    }

    private void skipFully(long n) throws IOException {
      long left = n;
      while (left > 0) {
        long s = in.skip(left);
        if (s <= 0) {
          throw new EOFException("frame payload ended early");
        }
        left -= s;
      }
    }
  }

  /** Straight from the parts of a frame that never left the process. */
  private static final class PartsReader extends PayloadReader {
    private final List<FloatRange> floats;
    private final List<ByteBuffer> bytes;
    private int part;
    private int used;

    PartsReader(Frame frame) {
      this.floats = frame.floatParts();
      this.bytes = frame.byteParts();
    }

    @Override
    public void readFloats(float[] dst, int off, int n) throws IOException {
      for (int done = 0; done < n; ) {
        int k = Math.min(n - done, left());
        if (!floats.isEmpty()) {
          FloatRange r = floats.get(part);
          System.arraycopy(r.array(), r.offset() + used, dst, off + done, k);
        } else {
          source().asFloatBuffer().get(dst, off + done, k);
        }
        advance(k);
        done += k;
      }
    }

    @Override
    public void readBytes(ByteBuffer dst) throws IOException {
      while (dst.hasRemaining()) {
        int k = Math.min(dst.remaining() / 4, left());
        if (!floats.isEmpty()) {
          FloatRange r = floats.get(part);
          dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(r.array(), r.offset() + used, k);
          dst.position(dst.position() + k * 4);
        } else {
          ByteBuffer src = source();
          src.limit(src.position() + k * 4);
          dst.put(src);
        }
        advance(k);
      }
    }

    private ByteBuffer source() {
      ByteBuffer b = bytes.get(part).duplicate().order(ByteOrder.LITTLE_ENDIAN);
      b.position(b.position() + used * 4);
      return b;
    }

    private int left() throws EOFException {
      int parts = floats.isEmpty() ? bytes.size() : floats.size();
      while (part < parts) {
        int size = floats.isEmpty() ? bytes.get(part).remaining() / 4 : floats.get(part).length();
        if (used < size) {
          return size - used;
        }
        part++;
        used = 0;
      }
      throw new EOFException("frame payload ended early");
    }

    private void advance(int k) {
      used += k;
    }
  }
}
