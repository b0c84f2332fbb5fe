package io.sparkps.ps.bench;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.PsToken;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

/**
 * Bytes per training step of an embedding table against its size: two ps over loopback sockets hold
 * a table of dim 16 (row-wise AdaGrad) filled with 10^5 rows, then one of 10^7; a worker takes the
 * same steps on each: a minibatch of 512 examples with 26 ids each, drawn (the same on every table)
 * from its first 100,000 ids, then from all of its ids, with Zipf-like popularity (an id's rank is {@code n^u} for uniform u: log-uniform, as Zipf with
 * exponent 1), pulls the unique ids' rows and pushes their gradients. Printed per table: the
 * payload bytes per step, the unique ids per step, bytes per unique id, milliseconds per step,
 * and the heap in use of the one JVM holding both ps and the client.
 *
 * <p>Arguments: {@code [steps] [sizes...]} (default 200, 100000 10000000).
 */
public final class TableBytesBenchmark {
  private static final int DIM = 16;
  private static final int BATCH = 512;
  private static final int FIELDS = 26;

  private TableBytesBenchmark() {}

  public static void main(String[] args) {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    List<Long> sizes = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      sizes.add(Long.parseLong(args[i]));
    }
    if (sizes.isEmpty()) {
      sizes = List.of(100_000L, 10_000_000L);
    }
    PsToken token = PsToken.generate();
    List<ParameterServer> servers = new ArrayList<>();
    for (int s = 0; s < 2; s++) {
      servers.add(ParameterServer.builder().setShardIndex(s).setToken(token).optHost("127.0.0.1").build().start());
    }
    System.out.printf(Locale.ROOT, "%-12s %-12s %10s %14s %12s %12s %10s %12s%n", "table rows", "ids from", "fill s",
        "bytes/step", "ids/step", "bytes/id", "ms/step", "JVM heap MiB");
    try (PsClient ps = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList())
        .setToken(token).optSameJvmTransfers(false).build()) {
      for (long size : sizes) {
        EmbeddingTable table = ps.embeddingTable(EmbeddingSpec.builder().setName("t" + size).setDim(DIM)
            .optOptimizer("ROWWISE_ADAGRAD", 0.05).optMaxRowsPerShard((int) Math.min(Integer.MAX_VALUE, size)).build());
        long fillStart = System.nanoTime();
        for (long from = 0; from < size; from += 100_000) {
          table.pull(LongStream.range(from, Math.min(size, from + 100_000)).toArray(), 0);
        }
        double fill = (System.nanoTime() - fillStart) / 1e9;
        System.gc();
        long heap = (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory()) >> 20;
        // The same minibatches on every table (ids drawn from the first 100,000), then ones drawn from all of it.
        for (long range : new java.util.TreeSet<>(List.of(Math.min(size, 100_000L), size))) {
          SplittableRandom random = new SplittableRandom(7);
          long bytes0 = ps.tableBytes();
          long ids = 0;
          long start = System.nanoTime();
          for (int step = 1; step <= steps; step++) {
            long[] unique = LongStream.generate(() -> (long) Math.pow(range, random.nextDouble()) - 1)
                .limit((long) BATCH * FIELDS).distinct().toArray();
            ids += unique.length;
            table.pull(unique, step);
            table.push(unique, new float[unique.length * DIM], step);
          }
          double ms = (System.nanoTime() - start) / 1e6 / steps;
          long perStep = (ps.tableBytes() - bytes0) / steps;
          System.out.printf(Locale.ROOT, "%-12d %-12d %10.1f %14d %12d %12.1f %10.2f %12d%n", size, range, fill, perStep,
              ids / steps, (double) (ps.tableBytes() - bytes0) / ids, ms, heap);
        }
      }
    } finally {
      servers.forEach(ParameterServer::close);
    }
    System.exit(0);
  }
}
