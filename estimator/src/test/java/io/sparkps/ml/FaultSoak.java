package io.sparkps.ml;

import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The fault soak (not in CI; {@code mvn -pl estimator test-compile exec:exec@fault-soak
 * -Dsoak.args="5"}): Fashion-MNIST through the estimator on {@code local-cluster[4,1,1536]} with 2
 * workers, 1 ps and an evaluator (every slot busy), SYNC, one epoch; each fault repeated
 * {@code runs} times at a random point of the run (10% to 90% of its steps). A run survived when it
 * ended with a model no more than one point below a clean run's test accuracy. Prints, per fault,
 * runs / survived / the median and worst time until the run declared the lost ps lost and until its
 * replacement was refilled, and the run times; exits 1 unless every run survived.
 *
 * <p>Arguments: {@code [runs per fault (5)] [faults, comma-separated (all): ps-kill, ps-stop,
 * worker-kill, worker-stop, ps-and-worker-kill] [seed (1)]}.
 */
public final class FaultSoak {
  private static final List<String> FAULTS = List.of("ps-kill", "ps-stop", "worker-kill", "worker-stop",
      "ps-and-worker-kill");

  private FaultSoak() {}

  /** One run under one fault. */
  private record Run(boolean survived, double accuracy, long noticedMs, long refilledMs, long seconds, String note) {}

  public static void main(String[] args) throws Exception {
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    List<String> faults = args.length > 1 ? List.of(args[1].split(",")) : FAULTS;
    Random random = new Random(args.length > 2 ? Long.parseLong(args[2]) : 1);
    for (String f : faults) {
      if (!FAULTS.contains(f)) {
        throw new IllegalArgumentException("unknown fault '" + f + "': one of " + FAULTS);
      }
    }
    Faults cluster = Faults.start(Files.createTempDirectory("sparkps-soak"), 4, 1, 1536, "fault-soak", 60_000);
    int code = 0;
    try {
      Run clean = run(cluster, null, 0, Double.NaN);
      System.out.printf(Locale.ROOT, "clean run: accuracy %.4f in %d s%n", clean.accuracy(), clean.seconds());
      Map<String, List<Run>> all = new LinkedHashMap<>();
      for (int r = 0; r < runs; r++) {
        for (String fault : faults) {
          double at = 0.1 + 0.8 * random.nextDouble();
          Run run = run(cluster, fault, at, clean.accuracy());
          all.computeIfAbsent(fault, k -> new ArrayList<>()).add(run);
          System.out.printf(Locale.ROOT, "%-19s at %3.0f%%: %s, accuracy %.4f, lost after %d ms, refilled after %d ms, "
              + "%d s; %s%n", fault, 100 * at, run.survived() ? "survived" : "FAILED", run.accuracy(), run.noticedMs(),
              run.refilledMs(), run.seconds(), run.note());
        }
      }
      System.out.printf(Locale.ROOT, "%n%-19s %5s %9s %26s %28s %16s%n", "fault", "runs", "survived",
          "ps lost after ms (med/max)", "refilled after ms (med/max)", "run s (med/max)");
      for (Map.Entry<String, List<Run>> e : all.entrySet()) {
        List<Run> list = e.getValue();
        long survived = list.stream().filter(Run::survived).count();
        code |= survived == list.size() ? 0 : 1;
        System.out.printf(Locale.ROOT, "%-19s %5d %9d %26s %28s %16s%n", e.getKey(), list.size(), survived,
            medMax(list.stream().mapToLong(Run::noticedMs).filter(x -> x >= 0).toArray()),
            medMax(list.stream().mapToLong(Run::refilledMs).filter(x -> x >= 0).toArray()),
            medMax(list.stream().mapToLong(Run::seconds).toArray()));
      }
    } finally {
      cluster.stop();
    }
    System.exit(code); // a barrier stage in local mode leaves a non-daemon timer thread
  }

  private static String medMax(long[] values) {
    if (values.length == 0) {
      return "-";
    }
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2] + " / " + sorted[sorted.length - 1];
  }

  private static Run run(Faults cluster, String fault, double at, double clean) throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 4, 300);
    long started = System.nanoTime();
    FitJob job = new Dl4jEstimator().setNetworkJson(FashionMnistTestSet.mlp()).setNumWorkers(2).setNumPs(1)
        .setConsistency(Consistency.SYNC).setEpochs(1).setBatchSize(64).setSeed(7).setEvalEverySeconds(1)
        .fitAsync(cluster.train, cluster.eval);
    List<ProcessHandle> victims = new ArrayList<>();
    long[] times = {-1, -1};
    try {
      if (fault != null) {
        List<TaskProgress> roles = Faults.awaitSyncStep(job, (long) (job.totalSteps() * at));
        for (String executor : executors(roles, fault)) {
          victims.add(LocalClusters.executorProcess(cluster.sc, executor));
        }
        long signalled = System.nanoTime();
        for (ProcessHandle p : victims) {
          LocalClusters.signal(p, fault.endsWith("stop") ? "STOP" : "KILL");
        }
        if (fault.startsWith("ps")) {
          times = Faults.awaitRecovery(job, signalled);
        }
      }
      Dl4jModel model = job.get(Duration.ofMinutes(10));
      double accuracy = cluster.accuracy(model);
      boolean survived = Double.isNaN(clean) || accuracy >= clean - 0.01;
      return new Run(survived, accuracy, times[0], times[1], (System.nanoTime() - started) / 1_000_000_000L,
          model.summary().stageAttempts() + " stage attempts, " + model.summary().psRecoveries());
    } catch (Exception e) {
      return new Run(false, Double.NaN, times[0], times[1], (System.nanoTime() - started) / 1_000_000_000L,
          e.toString().lines().findFirst().orElse(""));
    } finally {
      for (ProcessHandle p : victims) {
        LocalClusters.killIfAlive(p);
      }
    }
  }

  /** The executors a fault hits: the ps's, worker 1's, or both. */
  private static Set<String> executors(List<TaskProgress> roles, String fault) {
    Set<String> out = new LinkedHashSet<>();
    for (TaskProgress r : roles) {
      boolean ps = r.role() == Role.PS;
      boolean worker = r.role() == Role.WORKER && r.index() == 1;
      if ((fault.startsWith("ps") && ps) || (fault.contains("worker") && worker)) {
        out.add(r.executor());
      }
    }
    return out;
  }
}
