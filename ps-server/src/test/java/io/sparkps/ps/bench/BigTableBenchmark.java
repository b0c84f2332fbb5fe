package io.sparkps.ps.bench;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.PsToken;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

/**
 * A table larger than any one ps's heap: four ps, each its own JVM of 1 GiB heap, hold one table
 * of dim 32 with AdaGrad (a row and its state: 256 bytes of floats) of 10.5 million rows, 2.5 GiB of
 * rows and state in all. This JVM is the worker: it creates the rows as a training run does (pulls
 * of new ids, 50,000 a call), then takes training steps (minibatches of 512 examples of 26 ids,
 * Zipf-like over every id: pull the unique ids, push their gradients), then reads back a sample of
 * ids from the whole range to check that every row is there and trained. Printed: the fill and step
 * times, and per ps its heap limit, its peak heap (the JVM's heap pools' peak use, garbage
 * included) and its live heap after a full collection at the end.
 *
 * <p>Arguments: {@code [rows] [steps] [psHeapMiB]} (default 10500000, 200, 1024).
 */
public final class BigTableBenchmark {
  private static final int DIM = 32;
  private static final int PS = 4;

  private BigTableBenchmark() {}

  public static void main(String[] args) throws Exception {
    long rows = args.length > 0 ? Long.parseLong(args[0]) : 10_500_000L;
    int steps = args.length > 1 ? Integer.parseInt(args[1]) : 200;
    int heapMiB = args.length > 2 ? Integer.parseInt(args[2]) : 1024;
    PsToken token = PsToken.generate();
    List<Process> servers = new ArrayList<>();
    List<BufferedReader> outs = new ArrayList<>();
    List<String> addresses = new ArrayList<>();
    try {
      for (int s = 0; s < PS; s++) {
        Process p = new ProcessBuilder(command(s, heapMiB)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        servers.add(p);
        p.getOutputStream().write((token.secret() + "\n").getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().flush();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        outs.add(out);
        addresses.add(expect(out, "address ", "ps " + s + " to start"));
      }
      long bytes = rows * (DIM * 2L * Float.BYTES);
      System.out.printf(Locale.ROOT, "%d ps of %d MiB heap each (their JVMs), one table: %,d rows of dim %d with "
          + "AdaGrad state, %.2f GiB of rows and state%n", PS, heapMiB, rows, DIM, bytes / (double) (1L << 30));
      try (PsClient ps = PsClient.builder().setShards(addresses)
          .setToken(token).build()) {
        int perShard = (int) Math.min(Integer.MAX_VALUE, rows / PS + rows / 20);
        EmbeddingTable table = ps.embeddingTable(EmbeddingSpec.builder().setName("big").setDim(DIM)
            .optOptimizer("ADAGRAD", 0.05).optMaxRowsPerShard(perShard).build());
        long start = System.nanoTime();
        for (long from = 0; from < rows; from += 50_000) {
          table.pull(LongStream.range(from, Math.min(rows, from + 50_000)).toArray(), 0);
          if ((from / 50_000) % 20 == 19) {
            System.out.printf(Locale.ROOT, "  %,d rows%n", from + 50_000);
          }
        }
        double fill = (System.nanoTime() - start) / 1e9;
        System.out.printf(Locale.ROOT, "filled in %.1f s (%,.0f rows/s)%n", fill, rows / fill);
        SplittableRandom random = new SplittableRandom(11);
        long ids = 0;
        start = System.nanoTime();
        for (int step = 1; step <= steps; step++) {
          long[] unique = LongStream.generate(() -> (long) Math.pow(rows, random.nextDouble()) - 1).limit(512L * 26)
              .distinct().toArray();
          ids += unique.length;
          table.pull(unique, step);
          float[] g = new float[unique.length * DIM];
          for (int i = 0; i < g.length; i++) {
            g[i] = (float) (random.nextDouble() - 0.5);
          }
          table.push(unique, g, step);
        }
        double ms = (System.nanoTime() - start) / 1e6 / steps;
        System.out.printf(Locale.ROOT, "%d training steps: %.1f ms a step, %d unique ids a step%n", steps, ms,
            ids / steps);
        long[] sample = LongStream.generate(() -> random.nextLong(rows)).limit(100_000).toArray();
        float[] read = table.read(sample);
        long present = 0;
        for (int i = 0; i < sample.length; i++) {
          boolean any = false;
          for (int d = 0; d < DIM && !any; d++) {
            any = read[i * DIM + d] != 0;
          }
          present += any ? 1 : 0;
        }
        System.out.printf(Locale.ROOT, "read back %,d ids drawn from all %,d: %,d have their own row%n", sample.length,
            rows, present);
        if (present != sample.length) {
          throw new IllegalStateException((sample.length - present) + " sampled rows are missing");
        }
      }
      System.out.printf(Locale.ROOT, "%-4s %12s %16s %16s%n", "ps", "heap MiB", "peak heap MiB", "live heap MiB");
      for (int s = 0; s < PS; s++) {
        servers.get(s).getOutputStream().write("report\n".getBytes(StandardCharsets.UTF_8));
        servers.get(s).getOutputStream().flush();
        System.out.printf(Locale.ROOT, "%-4d %s%n", s, expect(outs.get(s), "heap ", "ps " + s + "'s heap report"));
      }
    } finally {
      for (Process p : servers) {
        p.destroy();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
    }
    System.exit(0);
  }

  private static List<String> command(int shard, int heapMiB) {
    List<String> c = new ArrayList<>();
    c.add(ProcessHandle.current().info().command().orElse("java"));
    c.add("-Xmx" + heapMiB + "m");
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens") || a.startsWith("--add-exports")) {
        c.add(a);
      }
    }
    c.addAll(List.of("-cp", System.getProperty("java.class.path"), Server.class.getName(), String.valueOf(shard)));
    return c;
  }

  private static String expect(BufferedReader out, String prefix, String what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    String line;
    while ((line = out.readLine()) != null) {
      if (line.startsWith(prefix)) {
        return line.substring(prefix.length());
      }
      if (System.nanoTime() > deadline) {
        break;
      }
    }
    throw new IllegalStateException("waited 60 s for " + what + "; its output ended or never said '" + prefix + "'");
  }

  /** One ps in a JVM of its own: reads the token from stdin, prints its address, reports its heap when asked. */
  public static final class Server {
    private Server() {}

    public static void main(String[] args) throws Exception {
      PrintStream out = System.out;
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      PsToken token = PsToken.of(in.readLine().trim());
      ParameterServer server = ParameterServer.builder().setShardIndex(Integer.parseInt(args[0])).setToken(token)
          .optHost("127.0.0.1").build().start();
      out.println("address " + server.address());
      out.flush();
      String line;
      while ((line = in.readLine()) != null) {
        if (line.equals("report")) {
          long peak = 0;
          for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
              peak += pool.getPeakUsage().getUsed();
            }
          }
          System.gc();
          Runtime r = Runtime.getRuntime();
          out.printf(Locale.ROOT, "heap %12d %16d %16d%n", r.maxMemory() >> 20, peak >> 20,
              (r.totalMemory() - r.freeMemory()) >> 20);
          out.flush();
        }
      }
      server.close();
    }
  }
}
