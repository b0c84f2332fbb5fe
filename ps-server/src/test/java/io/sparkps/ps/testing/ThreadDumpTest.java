package io.sparkps.ps.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The thread-leak check itself: which new threads it reports, read here and through jstack. */
class ThreadDumpTest {
  private static Thread parked(String name, CountDownLatch release) throws InterruptedException {
    CountDownLatch started = new CountDownLatch(1);
    Thread t = new Thread(() -> {
      started.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, name);
    t.setDaemon(true);
    t.start();
    started.await();
    return t;
  }

  @Test
  void leftSince_reportsNewParkedThreads_excusesIdleWorkersThatEnd_neverSparkPsOrGrpc() throws Exception {
    ExecutorService fixed = Executors.newFixedThreadPool(2, r -> new Thread(r, "fixed-pool-" + System.nanoTime()));
    fixed.submit(() -> { }).get(); // one worker before
    Map<Long, ThreadDump.Info> before = ThreadDump.ofThisJvm();
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService cached = Executors.newCachedThreadPool(r -> new Thread(r, "some-cached-pool"));
    try {
      cached.submit(() -> { }).get(); // an idle worker that ends after 60 s by itself
      fixed.submit(() -> { }).get();
      fixed.submit(() -> { }).get(); // the fixed pool grows to its size
      Thread leak = parked("readInto-like", release);
      Thread ours = parked("grpc-default-executor-7", release);
      Thread.sleep(200); // the pools' workers are back waiting for work
      List<String> left = ThreadDump.leftSince(before, ThreadDump.ofThisJvm()).stream().map(ThreadDump.Info::name)
          .sorted().toList();
      assertEquals(List.of(ours.getName(), leak.getName()), left);
      assertEquals(List.of(ours.getName()), ThreadDump.ours(ThreadDump.ofThisJvm()).stream()
          .map(ThreadDump.Info::name).filter(n -> n.equals(ours.getName())).toList());
    } finally {
      release.countDown();
      cached.shutdownNow();
      fixed.shutdownNow();
    }
  }

  @Test
  void jstack_readsEveryThreadWithItsIdNameStateAndStack() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    Thread t = parked("dump-me", release);
    try {
      Map<Long, ThreadDump.Info> dump = ThreadDump.jstack(ProcessHandle.current().pid());
      ThreadDump.Info info = dump.get(t.getId());
      assertTrue(info != null, "thread " + t.getId() + " in " + dump.keySet());
      assertEquals("dump-me", info.name());
      assertEquals("WAITING", info.state());
      assertTrue(info.inStack("CountDownLatch.await"), info.toString());
      assertTrue(dump.size() >= ThreadDump.ofThisJvm().size() / 2, dump.size() + " threads");
    } finally {
      release.countDown();
      t.join(TimeUnit.SECONDS.toMillis(5));
    }
  }

  @Test
  void leftSince_excusesOtherLibrariesNettyLoops_ofNetty41And42_butNotGrpcs() {
    String dump = String.join("\n",
        "\"shuffle-client-4-2\" #201 daemon prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x2 runnable",
        "   java.lang.Thread.State: RUNNABLE",
        "\tat io.netty.channel.epoll.Native.epollWait0(Native Method)",
        "\tat io.netty.channel.epoll.EpollIoHandler.run(EpollIoHandler.java:1)",
        "\tat io.netty.channel.SingleThreadIoEventLoop.run(SingleThreadIoEventLoop.java:1)",
        "",
        "\"rpc-server-3-1\" #202 daemon prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x2 runnable",
        "   java.lang.Thread.State: RUNNABLE",
        "\tat io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:1)",
        "",
        "\"grpc-nio-worker-ELG-1-2\" #203 daemon prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x2 runnable",
        "   java.lang.Thread.State: RUNNABLE",
        "\tat io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:1)",
        "",
        "\"someone-elses-loop\" #204 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x2 waiting on condition",
        "   java.lang.Thread.State: WAITING (parking)",
        "\tat jdk.internal.misc.Unsafe.park(Native Method)",
        "");
    Map<Long, ThreadDump.Info> after = ThreadDump.parse(dump);
    assertEquals(4, after.size(), after.toString());
    assertEquals(List.of("grpc-nio-worker-ELG-1-2", "someone-elses-loop"),
        ThreadDump.leftSince(Map.of(), after).stream().map(ThreadDump.Info::name).toList());
  }
}
