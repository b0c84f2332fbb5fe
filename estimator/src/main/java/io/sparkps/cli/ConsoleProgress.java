package io.sparkps.cli;

import io.sparkps.ml.TrainingProgress;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.TaskProgress;
import java.io.PrintStream;
import java.time.Duration;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The driver's view of training ({@link TrainingProgress}): a progress bar on a terminal, or a plain
 * line every few seconds when the output is not a terminal or progress bars are off.
 */
final class ConsoleProgress implements ProgressListener {
  private static final long LINE_EVERY_NANOS = Duration.ofSeconds(5).toNanos();
  private final PrintStream out;
  private final TrainingProgress progress;
  private final ProgressBar bar;
  private long lastLine;

  ConsoleProgress(PrintStream out, long totalSteps, int stepsPerEpoch, boolean bar) {
    this.out = out;
    this.progress = new TrainingProgress(totalSteps, stepsPerEpoch);
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
    if (!progress.accept(p)) {
      return;
    }
    if (bar != null) {
      bar.stepTo(progress.step());
      bar.setExtraMessage(progress.summary());
      return;
    }
    long now = System.nanoTime();
    if (now - lastLine >= LINE_EVERY_NANOS || progress.step() >= progress.totalSteps()) {
      lastLine = now;
      out.println(progress.line());
    }
  }

  @Override
  public synchronized void onEnd(JobStatus status, Throwable failure) {
    progress.onEnd(status, failure);
    if (bar != null) {
      if (status == JobStatus.SUCCEEDED) {
        bar.stepTo(progress.totalSteps());
      }
      bar.close();
    } else {
      out.println(progress.line());
    }
  }
}
