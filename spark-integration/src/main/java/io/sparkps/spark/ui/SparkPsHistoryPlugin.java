package io.sparkps.spark.ui;

import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;

/**
 * Shows the SparkPS tab in the History Server: its listener rebuilds the runs from the event
 * log's SparkPS events, and applications that ran SparkPS get the tab. Found by the History
 * Server through {@code META-INF/services} (the SparkPS jar on its class path).
 */
public final class SparkPsHistoryPlugin implements AppHistoryServerPlugin {
  @Override
  public scala.collection.immutable.Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    return scala.collection.JavaConverters.asScalaBuffer(List.<SparkListener>of(new SparkPsListener(new RunStore(store))))
        .toList();
  }

  @Override
  public void setupUI(SparkUI ui) {
    RunStore store = new RunStore(ui.store().store());
    if (store.count() > 0) {
      SparkPsTab.attach(ui, store, ui.conf());
    }
  }
}
