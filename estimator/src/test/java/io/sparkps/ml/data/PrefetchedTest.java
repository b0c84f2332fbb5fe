package io.sparkps.ml.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PrefetchedTest {
  /** Counts 0, 1, ... up to {@code n}, recording which thread made each element and how many were made. */
  private static final class Counting implements Iterator<Integer> {
    final int n;
    final AtomicInteger made = new AtomicInteger();
    final List<String> threads = new ArrayList<>();

    Counting(int n) {
      this.n = n;
    }

    @Override
    public boolean hasNext() {
      return made.get() < n;
    }

    @Override
    public Integer next() {
      threads.add(Thread.currentThread().getName());
      return made.getAndIncrement();
    }
  }

  @Test
  void handsOutEveryElementInOrder_madeAheadOnItsOwnThreadOnlyWhenAsked() throws Exception {
    Counting source = new Counting(5);
    List<Integer> seen = new ArrayList<>();
    String caller = Thread.currentThread().getName();
    try (Prefetched<Integer> p = new Prefetched<>(source, "prefetch-test", Duration.ofSeconds(10))) {
      p.prefetch();
      waitFor(() -> source.made.get() == 1); // made before it is asked for
      seen.add(p.next());
      seen.add(p.next()); // not asked ahead: made now, by the caller
      p.prefetch();
      p.prefetch(); // while one is in the making, no second one is started
      waitFor(() -> source.made.get() == 3);
      Thread.sleep(50);
      assertEquals(3, source.made.get(), "one element ahead at the most");
      while (p.hasNext()) {
        seen.add(p.next());
      }
      assertThrows(NoSuchElementException.class, p::next);
    }
    assertEquals(List.of(0, 1, 2, 3, 4), seen);
    assertEquals(List.of("prefetch-test", caller, "prefetch-test", caller, caller), source.threads);
    assertFalse(threadAlive("prefetch-test"), "close ends the thread");
  }

  @Test
  void aFailureOfTheSource_isThrownByNext_withItsOwnStackTrace() {
    Iterator<Integer> failing = new Iterator<>() {
      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public Integer next() {
        throw new IllegalArgumentException("row 17 of partition 3 has 783 features, the network takes 784");
      }
    };
    try (Prefetched<Integer> p = new Prefetched<>(failing, "prefetch-fail", Duration.ofSeconds(10))) {
      p.prefetch();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, p::next);
      assertEquals("row 17 of partition 3 has 783 features, the network takes 784", e.getMessage());
      StackTraceElement top = e.getStackTrace()[0];
      assertTrue(top.getClassName().startsWith(PrefetchedTest.class.getName() + "$") && top.getMethodName().equals("next"),
          "the stack trace is the source's, where it failed: " + top);
    }
  }

  @Test
  void close_waitsForTheElementInTheMaking_beforeTheSourceMayBeReleased() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean finished = new AtomicBoolean();
    Iterator<Integer> slow = slowSource(started, finished, () -> Thread.sleep(300));
    Prefetched<Integer> p = new Prefetched<>(slow, "prefetch-close", Duration.ofSeconds(10));
    p.prefetch();
    assertTrue(started.await(10, TimeUnit.SECONDS));
    p.close();
    assertTrue(finished.get(), "close returned while the source was still being read");
    assertFalse(threadAlive("prefetch-close"));
    IllegalStateException closed = assertThrows(IllegalStateException.class, p::hasNext);
    assertEquals("prefetch-close is closed", closed.getMessage());
    p.close(); // idempotent
  }

  /**
   * The task ends (Spark interrupts its thread) while the next minibatch is being copied out of a
   * mapped block: close must still wait for the copy, or the blocks are unmapped under it (a JVM
   * crash in CI). The source is held mid-element, the closing thread interrupted, then released.
   */
  @Test
  void close_interrupted_stillWaitsForTheElementInTheMaking_andKeepsTheInterrupt() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch hold = new CountDownLatch(1);
    AtomicBoolean finished = new AtomicBoolean();
    Iterator<Integer> held = slowSource(started, finished, hold::await);
    Prefetched<Integer> p = new Prefetched<>(held, "prefetch-interrupted", Duration.ofSeconds(30));
    p.prefetch();
    assertTrue(started.await(10, TimeUnit.SECONDS));
    AtomicBoolean finishedWhenClosed = new AtomicBoolean();
    AtomicBoolean interruptKept = new AtomicBoolean();
    Thread closer = new Thread(() -> {
      p.close();
      finishedWhenClosed.set(finished.get());
      interruptKept.set(Thread.currentThread().isInterrupted());
    }, "closer");
    closer.start();
    waitFor(() -> closer.getState() == Thread.State.TIMED_WAITING || closer.getState() == Thread.State.WAITING);
    closer.interrupt();
    closer.join(500);
    assertTrue(closer.isAlive(), "close returned on the interrupt while the source was still being read");
    hold.countDown();
    closer.join(10_000);
    assertFalse(closer.isAlive());
    assertTrue(finishedWhenClosed.get(), "close returned before the element in the making was done");
    assertTrue(interruptKept.get(), "the closing thread's interrupt is kept for it to see");
  }

  @Test
  void aStuckSource_failsTheWaitAfterTheTimeout_namingTheThread() {
    CountDownLatch never = new CountDownLatch(1);
    Iterator<Integer> stuck = new Iterator<>() {
      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public Integer next() {
        try {
          never.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return 0;
      }
    };
    Prefetched<Integer> p = new Prefetched<>(stuck, "sparkps-minibatches-worker-1", Duration.ofMillis(200));
    p.prefetch();
    long t0 = System.nanoTime();
    IllegalStateException e = assertThrows(IllegalStateException.class, p::next);
    long waited = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(waited >= 150 && waited < 5000, "waited " + waited + " ms");
    assertTrue(e.getMessage().startsWith("sparkps-minibatches-worker-1 did not make the next element within 200 ms"),
        e.getMessage());
    IllegalStateException onClose = assertThrows(IllegalStateException.class, p::close);
    assertNotEquals(-1, onClose.getMessage().indexOf("still making an element"), onClose.getMessage());
    never.countDown();
  }

  private interface Wait {
    void run() throws InterruptedException;
  }

  /** An endless source whose each element says it started, waits on {@code wait}, then says it finished. */
  private static Iterator<Integer> slowSource(CountDownLatch started, AtomicBoolean finished, Wait wait) {
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public Integer next() {
        started.countDown();
        try {
          wait.run();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        finished.set(true);
        return 1;
      }
    };
  }

  private static boolean threadAlive(String name) throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      if (Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals(name) && t.isAlive())) {
        return false;
      }
      Thread.sleep(10);
    }
    return true;
  }

  private static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "the condition did not hold within 10 s");
      Thread.sleep(5);
    }
  }
}
