package io.sparkps.notebook;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.dflib.jjava.jupyter.kernel.DisplayStream;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;

/**
 * A run's progress as one display that is updated in place (Jupyter's {@code display_id}), the
 * way Dask's progress bar is: the run's status, elapsed time and examples per second, and per
 * task its step (of the total, with a bar), examples and reported metrics.
 */
final class ProgressDisplay {
  private static final long REFRESH_MILLIS = 500;
  private static final long TEXT_EVERY_MILLIS = 5000;

  private final String title;
  private final Supplier<JobStatus> status;
  private final Supplier<List<TaskProgress>> progress;
  private final long totalSteps;
  private Duration timeout;

  ProgressDisplay(String title, Supplier<JobStatus> status, Supplier<List<TaskProgress>> progress, long totalSteps) {
    this.title = title;
    this.status = status;
    this.progress = progress;
    this.totalSteps = totalSteps;
  }

  ProgressDisplay withTimeout(Duration timeout) {
    this.timeout = timeout;
    return this;
  }

  /**
   * Shows the progress and updates it until the run ends; returns how it ended. Without a
   * notebook to show it in, prints a line every 5 s. Throws TimeoutException (naming the run and
   * where it stands) when a timeout was set and passed first.
   */
  JobStatus follow(DisplayStream stream) throws InterruptedException, TimeoutException {
    String id = "sparkps-progress-" + UUID.randomUUID();
    long t0 = System.nanoTime();
    long examples0 = examples(progress.get());
    long lastText = 0;
    boolean first = true;
    while (true) {
      JobStatus now = status.get();
      List<TaskProgress> tasks = progress.get();
      long elapsed = (System.nanoTime() - t0) / 1_000_000;
      double rate = elapsed == 0 ? 0 : (examples(tasks) - examples0) * 1000.0 / elapsed;
      DisplayData d = render(title, now, tasks, totalSteps, elapsed, rate);
      if (stream != null && stream.isAttached()) {
        d.setDisplayId(id);
        if (first) {
          stream.display(d);
        } else {
          stream.updateDisplay(d);
        }
      } else if (first || now.isDone() || elapsed - lastText >= TEXT_EVERY_MILLIS) {
        System.out.println(Displays.text(d));
        lastText = elapsed;
      }
      first = false;
      if (now.isDone()) {
        return now;
      }
      if (timeout != null && elapsed > timeout.toMillis()) {
        throw new TimeoutException(title + " is still " + now + " after " + timeout.toMillis() + " ms: "
            + Displays.text(d));
      }
      Thread.sleep(REFRESH_MILLIS);
    }
  }

  /** One rendering, without a rate (a job that is a cell's value). */
  static DisplayData snapshot(String title, JobStatus status, List<TaskProgress> tasks, long totalSteps) {
    return render(title, status, tasks, totalSteps, -1, -1);
  }

  private static long examples(List<TaskProgress> tasks) {
    return tasks.stream().filter(t -> t.role() == Role.CHIEF || t.role() == Role.WORKER)
        .mapToLong(TaskProgress::examples).sum();
  }

  static DisplayData render(String title, JobStatus status, List<TaskProgress> tasks, long totalSteps,
      long elapsedMillis, double rate) {
    String head = "SparkPS " + title + ": " + status
        + (elapsedMillis >= 0 ? String.format(Locale.ROOT, ", %.1f s", elapsedMillis / 1000.0) : "")
        + (rate >= 0 ? String.format(Locale.ROOT, ", %.0f examples/s", rate) : "");
    StringBuilder text = new StringBuilder(head);
    StringBuilder html = new StringBuilder("<div class=\"sparkps-progress\"><b>").append(Displays.escape(head))
        .append("</b><table><tr><th>task</th><th>host</th><th>step</th><th></th><th>examples</th><th>metrics</th></tr>");
    for (TaskProgress t : tasks) {
      String task = t.role().name().toLowerCase(Locale.ROOT) + " " + t.index();
      boolean trains = t.role() == Role.CHIEF || t.role() == Role.WORKER;
      String step = t.step() + (trains && totalSteps > 0 ? " / " + totalSteps : "");
      String metrics = metrics(t.metrics());
      text.append("\n  ").append(task).append(" @ ").append(t.host()).append(": step ").append(step)
          .append(", ").append(t.examples()).append(" examples").append(metrics.isEmpty() ? "" : ", " + metrics);
      html.append("<tr><td>").append(task).append("</td><td>").append(Displays.escape(t.host())).append("</td><td>")
          .append(step).append("</td><td>")
          .append(trains && totalSteps > 0 ? "<progress value=\"" + Math.min(t.step(), totalSteps) + "\" max=\""
              + totalSteps + "\"></progress>" : "")
          .append("</td><td>").append(t.examples()).append("</td><td>").append(Displays.escape(metrics))
          .append("</td></tr>");
    }
    DisplayData d = new DisplayData(text.toString());
    d.putHTML(html.append("</table></div>").toString());
    return d;
  }

  private static String metrics(Map<String, Double> metrics) {
    return metrics.entrySet().stream().sorted(Map.Entry.comparingByKey())
        .map(e -> e.getKey() + " " + String.format(Locale.ROOT, "%.4g", e.getValue()))
        .collect(Collectors.joining(", "));
  }
}
