package io.sparkps.spark.yarn;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.spark.launcher.SparkAppHandle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A submitted YARN application: its id, state and tracking URL; wait for it, or kill it. */
public final class YarnRun {
  private static final Logger LOG = LoggerFactory.getLogger(YarnRun.class);
  private final SparkAppHandle handle;
  private final String name;
  private final CountDownLatch ended = new CountDownLatch(1);

  private final Configuration yarnConf;

  YarnRun(SparkAppHandle handle, String name, Configuration yarnConf, List<java.nio.file.Path> deleteWhenDone) {
    this.handle = handle;
    this.name = name;
    this.yarnConf = yarnConf;
    List<java.nio.file.Path> staged = List.copyOf(deleteWhenDone);
    handle.addListener(new SparkAppHandle.Listener() {
      @Override
      public void stateChanged(SparkAppHandle h) {
        if (h.getState().isFinal()) {
          delete(staged);
          ended.countDown();
        }
      }

      @Override
      public void infoChanged(SparkAppHandle h) {}
    });
    if (handle.getState().isFinal()) {
      delete(staged);
      ended.countDown();
    }
  }

  /** Deletes the submission's staged local files (they are shipped by then, or no longer needed). */
  static void delete(List<java.nio.file.Path> files) {
    for (java.nio.file.Path f : files) {
      try {
        java.nio.file.Files.deleteIfExists(f);
      } catch (java.io.IOException e) {
        LOG.warn("could not delete the staged file {}: {}", f, e.toString());
      }
    }
  }

  /** The YARN application id once YARN gave one (e.g. {@code application_1700000000000_0001}), else null. */
  public String applicationId() {
    return handle.getAppId();
  }

  /** Where the application stands (SUBMITTED, RUNNING, FINISHED, FAILED, KILLED, LOST, ...). */
  public SparkAppHandle.State state() {
    return handle.getState();
  }

  /** The application's tracking URL from the ResourceManager of {@code yarnConf}, or null before it has an id. */
  public String trackingUrl(Configuration yarnConf) throws Exception {
    String id = applicationId();
    if (id == null) {
      return null;
    }
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarnConf);
      client.start();
      return client.getApplicationReport(ApplicationId.fromString(id)).getTrackingUrl();
    }
  }

  /**
   * Waits at most {@code timeout} for the application to end and returns its final state; the
   * timeout's message names the application and where it stood. A driver that ended with a
   * failure while Spark's handle says FINISHED (client mode reports the context's stop) counts as
   * FAILED when the ResourceManager says the application failed.
   */
  public SparkAppHandle.State waitFor(Duration timeout) throws InterruptedException, TimeoutException {
    if (!ended.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new TimeoutException("YARN application " + name + " (" + applicationId() + ") is still " + state()
          + " after " + timeout.toSeconds() + " s");
    }
    SparkAppHandle.State state = state();
    if (state == SparkAppHandle.State.FINISHED && yarnConf != null && applicationId() != null) {
      FinalApplicationStatus status = finalStatus(Duration.ofSeconds(30));
      if (status == FinalApplicationStatus.FAILED) {
        return SparkAppHandle.State.FAILED;
      }
      if (status == FinalApplicationStatus.KILLED) {
        return SparkAppHandle.State.KILLED;
      }
    }
    return state;
  }

  /** The ResourceManager's final status of the application, waiting up to {@code wait} for it to be set. */
  private FinalApplicationStatus finalStatus(Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarnConf);
      client.start();
      while (true) {
        ApplicationReport report = client.getApplicationReport(ApplicationId.fromString(applicationId()));
        if (report.getFinalApplicationStatus() != FinalApplicationStatus.UNDEFINED || System.nanoTime() > deadline) {
          return report.getFinalApplicationStatus();
        }
        Thread.sleep(200);
      }
    } catch (java.io.IOException | org.apache.hadoop.yarn.exceptions.YarnException e) {
      return FinalApplicationStatus.UNDEFINED; // the ResourceManager cannot tell: Spark's word stands
    }
  }

  /** The ResourceManager's diagnostics of the application (why it failed, as {@code yarn application -status} shows). */
  public String diagnostics(Configuration yarnConf) throws Exception {
    if (applicationId() == null) {
      throw new IllegalStateException("YARN application " + name + " has no id yet: it was not submitted");
    }
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarnConf);
      client.start();
      return client.getApplicationReport(ApplicationId.fromString(applicationId())).getDiagnostics();
    }
  }

  /** Kills the application (and the spark-submit process). */
  public void kill() {
    handle.kill();
  }
}
