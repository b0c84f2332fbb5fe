package io.sparkps.spark;

import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A Spark plugin for tests ({@code spark.plugins}): every task of a {@code sparkps ps} job waits
 * {@value #DELAY_MS} ms before it runs (or until it is interrupted), as a ps whose executor is
 * too slow to start would. Production code knows nothing of it.
 */
public final class SlowPsStart implements SparkPlugin {
  static final long DELAY_MS = 600_000;

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext ctx, Map<String, String> extraConf) {}

      @Override
      public void onTaskStart() {
        String job = TaskContext.get().getLocalProperty("spark.job.description");
        if (job != null && job.startsWith("sparkps ps ")) {
          try {
            Thread.sleep(DELAY_MS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
  }
}
