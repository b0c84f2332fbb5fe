package io.sparkps.notebook;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.TaskProgress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.dflib.jjava.jupyter.kernel.DisplayStream;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;

/**
 * A listener that keeps one display of a run's progress up to date while the cell that runs it
 * (a {@code Pipeline.fit}, say) is running: per task the latest report, at most two updates a
 * second, and the run's end. Called on the run's listener thread; the kernel's output socket is
 * safe to publish on from there.
 */
final class LiveProgress implements ProgressListener {
  private static final long REFRESH_NANOS = 500_000_000L;

  private final String title;
  private final DisplayStream stream;
  private final String displayId = "sparkps-live-" + UUID.randomUUID();
  private final Map<String, TaskProgress> latest = new ConcurrentHashMap<>();
  private final long t0 = System.nanoTime();
  private long examples0 = -1;
  private long lastShown;
  private boolean shown;

  LiveProgress(String title, DisplayStream stream) {
    this.title = title;
    this.stream = stream;
  }

  @Override
  public synchronized void onProgress(TaskProgress progress) {
    String key = progress.role() + "/" + progress.index();
    TaskProgress before = latest.get(key);
    // a status line carries no metrics: it keeps the task's last step and figures
    latest.put(key, progress.metrics().isEmpty() && before != null ? new TaskProgress(before.role(), before.index(),
        before.host(), before.executor(), before.attempt(), before.step(), before.examples(), before.metrics(),
        progress.message(), progress.ageMillis(), before.timeMillis()) : progress);
    long now = System.nanoTime();
    if (!shown || now - lastShown >= REFRESH_NANOS) {
      show(JobStatus.RUNNING, now);
    }
  }

  @Override
  public synchronized void onEnd(JobStatus status, Throwable failure) {
    show(status, System.nanoTime());
  }

  private void show(JobStatus status, long now) {
    List<TaskProgress> tasks = new ArrayList<>(latest.values());
    tasks.sort(Comparator.comparing(TaskProgress::role).thenComparingInt(TaskProgress::index));
    long examples = tasks.stream().filter(t -> t.role() != io.sparkps.spark.Role.EVALUATOR && t.role()
        != io.sparkps.spark.Role.PS).mapToLong(TaskProgress::examples).sum();
    examples0 = examples0 < 0 ? examples : examples0;
    long elapsed = (now - t0) / 1_000_000;
    double rate = elapsed == 0 ? 0 : (examples - examples0) * 1000.0 / elapsed;
    DisplayData d = ProgressDisplay.render(title, status, tasks, -1, elapsed, rate);
    lastShown = now;
    if (stream == null || !stream.isAttached()) {
      if (!shown || status.isDone()) {
        System.out.println(Displays.text(d));
      }
    } else {
      d.setDisplayId(displayId);
      if (shown) {
        stream.updateDisplay(d);
      } else {
        stream.display(d);
      }
    }
    shown = true;
  }
}
