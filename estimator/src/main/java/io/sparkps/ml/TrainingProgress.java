package io.sparkps.ml;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a fit stands as its driver shows it (the command line's progress bar and lines, Python's
 * notebook bar and terminal line): the step every worker has reached, of the total, the epoch,
 * the workers' mean loss, examples/s since the start, the latest evaluation and the time left.
 * A listener of the run; thread-safe.
 */
public final class TrainingProgress implements ProgressListener {
  private final long totalSteps;
  private final int stepsPerEpoch;
  private final Map<Integer, TaskProgress> workers = new ConcurrentHashMap<>();
  private final long t0 = System.nanoTime();
  private volatile TaskProgress evaluation;
  private volatile JobStatus end;
  private final java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);

  public TrainingProgress(long totalSteps, int stepsPerEpoch) {
    this.totalSteps = totalSteps;
    this.stepsPerEpoch = Math.max(1, stepsPerEpoch);
  }

  /** Follows {@code job} from now on. */
  public static TrainingProgress of(FitJob job) {
    TrainingProgress p = new TrainingProgress(job.totalSteps(), job.stepsPerEpoch());
    job.addListener(p);
    return p;
  }

  /** Whether {@code p} changed what this shows (a worker's step or an evaluation). */
  public boolean accept(TaskProgress p) {
    if (p.role() == Role.EVALUATOR) {
      evaluation = p;
      return true;
    }
    if ((p.role() == Role.CHIEF || p.role() == Role.WORKER) && !p.metrics().isEmpty()) {
      workers.put(p.index(), p); // (a worker's status line carries no metrics: its last step's stand)
      return true;
    }
    return false;
  }

  @Override
  public void onProgress(TaskProgress p) {
    accept(p);
  }

  @Override
  public void onEnd(JobStatus status, Throwable failure) {
    end = status;
    ended.countDown();
  }

  /**
   * Waits at most {@code timeout} for the run's end to reach this listener, with the reports before
   * it. A run's status says it ended before its listeners have had the last deliveries (they come
   * from a thread of their own), so whoever reads this after seeing the run end waits here first.
   * True when the end arrived.
   */
  public boolean awaitEnd(java.time.Duration timeout) throws InterruptedException {
    return ended.await(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  /** The step every worker has reached. */
  public long step() {
    return workers.values().stream().mapToLong(TaskProgress::step).min().orElse(0);
  }

  public long totalSteps() {
    return totalSteps;
  }

  /** How the run ended, or null while it runs. */
  public JobStatus end() {
    return end;
  }

  /** The epoch, the mean loss, examples/s and the latest evaluation, e.g. "epoch 2 loss 0.4012 5120 examples/s". */
  public String summary() {
    StringBuilder b = new StringBuilder();
    double loss = workers.values().stream().mapToDouble(w -> w.metrics().getOrDefault("loss", Double.NaN)).average()
        .orElse(Double.NaN);
    long step = step();
    b.append(String.format(Locale.ROOT, "epoch %d loss %.4f", (step == 0 ? 0 : (step - 1) / stepsPerEpoch) + 1, loss));
    double seconds = (System.nanoTime() - t0) / 1e9;
    long examples = workers.values().stream().mapToLong(TaskProgress::examples).sum();
    b.append(String.format(Locale.ROOT, " %.0f examples/s", seconds > 0 ? examples / seconds : 0));
    TaskProgress e = evaluation;
    if (e != null) {
      Map<String, Double> m = e.metrics();
      String key = m.containsKey("accuracy") ? "accuracy" : "r2";
      if (m.containsKey(key)) {
        b.append(String.format(Locale.ROOT, " eval %s %.4f", key, m.get(key)));
      }
    }
    return b.toString();
  }

  /** The whole line: "[sparkps] step 120/936 (12%) epoch 1 loss ..., ETA 41 s", and how it ended once it has. */
  public String line() {
    long step = step();
    double seconds = (System.nanoTime() - t0) / 1e9;
    long eta = step > 0 ? Math.round(seconds / step * (totalSteps - step)) : -1;
    String line = String.format(Locale.ROOT, "[sparkps] step %d/%d (%d%%) %s, ETA %s", step, totalSteps,
        totalSteps == 0 ? 100 : 100 * step / totalSteps, summary(), eta < 0 ? "?" : eta + " s");
    JobStatus ended = end;
    return ended == null ? line : line + " - " + ended.name().toLowerCase(Locale.ROOT);
  }
}
