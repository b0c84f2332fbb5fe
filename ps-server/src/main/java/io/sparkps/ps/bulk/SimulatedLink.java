package io.sparkps.ps.bulk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.GatheringByteChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * For benchmarks on one machine: bulk connections paced as if each shard sat behind a network
 * link of a given speed, each way. Every connection of this JVM to the same shard shares that
 * shard's link (as the workers of a job share a ps's network card), and the time on the wire is
 * spent asleep, not on a core, as a network card's is (a sleep that overran is caught up on, up
 * to {@link #CATCH_UP_NANOS}). Loopback's own costs stay underneath.
 * Off unless the system property {@value #PROPERTY} gives gigabits per second.
 */
final class SimulatedLink {
  /** Gigabits per second of each shard's simulated link, each way (unset or 0: no pacing). */
  static final String PROPERTY = "sparkps.bulk.simulatedLinkGbps";
  /** Bytes moved between two checks of the clock. */
  private static final int SLICE = 64 * 1024;
  /**
   * Link time a transfer may catch up on after a sleep that overran (a busy core wakes the thread
   * late): without it every late wake-up would slow the simulated link, unlike a network card's.
   */
  static final long CATCH_UP_NANOS = 2_000_000;
  private static final Map<String, SimulatedLink> LINKS = new ConcurrentHashMap<>();

  private final double nanosPerByte;
  private final Object inLock = new Object();
  private final Object outLock = new Object();
  private long inFree;
  private long outFree;

  private SimulatedLink(double gbps) {
    this.nanosPerByte = 8 / gbps;
  }

  /** {@code ch} paced by the link of the shard at {@code shard} when the property is set, else {@code ch}. */
  static ByteChannel wrap(ByteChannel ch, String shard) {
    String value = System.getProperty(PROPERTY);
    if (value == null || value.isBlank()) {
      return ch;
    }
    double gbps;
    try {
      gbps = Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("system property " + PROPERTY + " is '" + value
          + "': give the simulated link's gigabits per second, such as 10, or leave it unset");
    }
    if (!(gbps >= 0) || Double.isInfinite(gbps)) {
      throw new IllegalArgumentException("system property " + PROPERTY + " is " + value
          + ": give a positive number of gigabits per second, or 0 for no pacing");
    }
    if (gbps == 0) {
      return ch;
    }
    SimulatedLink link = LINKS.compute(shard, (k, old) -> old != null && old.nanosPerByte == 8 / gbps ? old
        : new SimulatedLink(gbps));
    return new Paced(ch, link);
  }

  /** Waits until {@code bytes} more have crossed this link in one direction. */
  private void cross(boolean in, long bytes) {
    long due;
    synchronized (in ? inLock : outLock) {
      long now = System.nanoTime();
      long free = Math.max(now - CATCH_UP_NANOS, in ? inFree : outFree) + (long) (bytes * nanosPerByte);
      if (in) {
        inFree = free;
      } else {
        outFree = free;
      }
      due = free;
    }
    for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  private static final class Paced implements ByteChannel, GatheringByteChannel {
    private final ByteChannel ch;
    private final SimulatedLink link;

    Paced(ByteChannel ch, SimulatedLink link) {
      this.ch = ch;
      this.link = link;
    }

    private interface Io {
      int run(ByteBuffer b) throws IOException;
    }

    /** One read or write of at most a slice of {@code b}, then the wait for its bytes to cross the link. */
    private int paced(ByteBuffer b, boolean in, Io io) throws IOException {
      int limit = b.limit();
      b.limit(Math.min(limit, b.position() + SLICE));
      try {
        int n = io.run(b);
        if (n > 0) {
          link.cross(in, n);
        }
        return n;
      } finally {
        b.limit(limit);
      }
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      return paced(dst, true, ch::read);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      return paced(src, false, ch::write);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
      for (int i = offset; i < offset + length; i++) {
        if (srcs[i].hasRemaining()) {
          return write(srcs[i]);
        }
      }
      return 0;
    }

    @Override
    public long write(ByteBuffer[] srcs) throws IOException {
      return write(srcs, 0, srcs.length);
    }

    @Override
    public boolean isOpen() {
      return ch.isOpen();
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }
}
