package io.sparkps.spark.ui;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.util.kvstore.KVIndex;
import org.apache.spark.util.kvstore.KVStore;
import org.apache.spark.util.kvstore.KVStoreView;

/**
 * The SparkPS tab's data in Spark's application status store (the live application's, or the one
 * the History Server builds from an event log): each run's latest state, and its records in
 * chunks as they were posted. Entities are Jackson-serializable, as a disk-backed store needs.
 */
public final class RunStore {
  /** A run's latest state. */
  public static final class RunEntry {
    @KVIndex
    public String runId;
    public SparkPsEvents.RunUpdate update;

    public RunEntry() {}

    RunEntry(SparkPsEvents.RunUpdate update) {
      this.runId = update.runId;
      this.update = update;
    }
  }

  /** A chunk of a run's records: one {@link SparkPsEvents.StepsRecorded}. */
  public static final class StepsEntry {
    @KVIndex
    @JsonIgnore
    public String id() {
      return runId + "/" + String.format("%019d", first);
    }

    @KVIndex("run")
    public String runId;
    public long first;
    public List<SparkPsEvents.StepRow> rows;

    public StepsEntry() {}

    StepsEntry(SparkPsEvents.StepsRecorded e) {
      this.runId = e.runId;
      this.first = e.first;
      this.rows = e.rows;
    }
  }

  private final KVStore store;

  public RunStore(KVStore store) {
    this.store = store;
  }

  void write(SparkPsEvents.RunUpdate update) {
    write(new RunEntry(update));
  }

  void write(SparkPsEvents.StepsRecorded steps) {
    write(new StepsEntry(steps));
  }

  private void write(Object o) {
    try {
      store.write(o);
    } catch (Exception e) {
      throw new IllegalStateException("cannot write SparkPS's " + o.getClass().getSimpleName() + " to Spark's status store", e);
    }
  }

  /** Every run, the latest started first. */
  public List<SparkPsEvents.RunUpdate> runs() {
    List<SparkPsEvents.RunUpdate> out = new ArrayList<>();
    try {
      for (RunEntry e : store.view(RunEntry.class)) {
        out.add(e.update);
      }
    } catch (Exception e) {
      throw new IllegalStateException("cannot read SparkPS's runs from Spark's status store", e);
    }
    out.sort(Comparator.comparingLong((SparkPsEvents.RunUpdate u) -> u.startedMillis).reversed());
    return out;
  }

  /** The run {@code runId}, or null. */
  public SparkPsEvents.RunUpdate run(String runId) {
    try {
      return store.read(RunEntry.class, runId).update;
    } catch (java.util.NoSuchElementException e) {
      return null;
    } catch (Exception e) {
      throw new IllegalStateException("cannot read SparkPS run " + runId + " from Spark's status store", e);
    }
  }

  /** The records of run {@code runId}, oldest first. */
  public List<SparkPsEvents.StepRow> steps(String runId) {
    List<StepsEntry> chunks = new ArrayList<>();
    try {
      KVStoreView<StepsEntry> view = store.view(StepsEntry.class).index("run").first(runId).last(runId);
      view.forEach(chunks::add);
    } catch (Exception e) {
      throw new IllegalStateException("cannot read SparkPS run " + runId + "'s records from Spark's status store", e);
    }
    chunks.sort(Comparator.comparingLong(c -> c.first));
    List<SparkPsEvents.StepRow> out = new ArrayList<>();
    chunks.forEach(c -> out.addAll(c.rows));
    return out;
  }

  /** How many runs the store holds. */
  public long count() {
    try {
      return store.count(RunEntry.class);
    } catch (Exception e) {
      return 0;
    }
  }
}
