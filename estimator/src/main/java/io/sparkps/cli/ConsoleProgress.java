package io.sparkps.cli;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The driver's view of training: a progress bar (epoch, step of total, loss, latest evaluation,
 * examples/s, ETA) on a terminal, or a plain line every few seconds when the output is not a
 * terminal or progress bars are off.
 */
final class ConsoleProgress implements ProgressListener {
  private static final long LINE_EVERY_NANOS = Duration.ofSeconds(5).toNanos();
  private final PrintStream out;
  private final long totalSteps;
  private final int stepsPerEpoch;
  private final ProgressBar bar;
  private final Map<Integer, TaskProgress> workers = new ConcurrentHashMap<>();
  private final long t0 = System.nanoTime();
  private volatile TaskProgress evaluation;
  private long lastLine;

  ConsoleProgress(PrintStream out, long totalSteps, int stepsPerEpoch, boolean bar) {
    this.out = out;
    this.totalSteps = totalSteps;
    this.stepsPerEpoch = Math.max(1, stepsPerEpoch);
    this.bar = bar ? new ProgressBarBuilder().setTaskName("training").setInitialMax(totalSteps)
        .setStyle(ProgressBarStyle.ASCII).setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(out))
        .showSpeed().setUnit(" steps", 1).build() : null;
  }

  /** Whether this process writes to a terminal a progress bar can redraw. */
  static boolean terminal() {
    return System.console() != null && System.getenv("TERM") != null && !"dumb".equals(System.getenv("TERM"));
  }

  @Override
  public synchronized void onProgress(TaskProgress p) {
    if (p.role() == Role.EVALUATOR) {
      evaluation = p;
    } else if ((p.role() == Role.CHIEF || p.role() == Role.WORKER) && !p.metrics().isEmpty()) {
      workers.put(p.index(), p); // (a worker's status line carries no metrics: its last step's stand)
    } else {
      return;
    }
    long step = workers.values().stream().mapToLong(TaskProgress::step).min().orElse(0);
    if (bar != null) {
      bar.stepTo(step);
      bar.setExtraMessage(extra());
      return;
    }
    long now = System.nanoTime();
    if (now - lastLine >= LINE_EVERY_NANOS || step >= totalSteps) {
      lastLine = now;
      out.println(line(step, now));
    }
  }

  private String extra() {
    StringBuilder b = new StringBuilder();
    double loss = workers.values().stream().mapToDouble(w -> w.metrics().getOrDefault("loss", Double.NaN)).average()
        .orElse(Double.NaN);
    long step = workers.values().stream().mapToLong(TaskProgress::step).min().orElse(0);
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

  private String line(long step, long now) {
    double seconds = (now - t0) / 1e9;
    long eta = step > 0 ? Math.round(seconds / step * (totalSteps - step)) : -1;
    return String.format(Locale.ROOT, "[sparkps] step %d/%d (%d%%) %s, ETA %s", step, totalSteps,
        totalSteps == 0 ? 100 : 100 * step / totalSteps, extra(), eta < 0 ? "?" : eta + " s");
  }

  @Override
  public synchronized void onEnd(JobStatus status, Throwable failure) {
    if (bar != null) {
      if (status == JobStatus.SUCCEEDED) {
        bar.stepTo(totalSteps);
      }
      bar.close();
    } else {
      out.println(line(workers.values().stream().mapToLong(TaskProgress::step).min().orElse(0), System.nanoTime())
          + " - " + status.name().toLowerCase());
    }
  }
}
