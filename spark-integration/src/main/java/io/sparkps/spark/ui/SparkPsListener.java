package io.sparkps.spark.ui;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Keeps the SparkPS tab's store: each run's latest state and its records, from the events runs
 * post (live) or the event log replays (History Server).
 */
public final class SparkPsListener extends SparkListener {
  private final RunStore store;

  public SparkPsListener(RunStore store) {
    this.store = store;
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (event instanceof SparkPsEvents.RunUpdate u) {
      store.write(u);
    } else if (event instanceof SparkPsEvents.StepsRecorded s) {
      store.write(s);
    }
  }
}
