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

  /** Runs whose records the store keeps; an older run keeps its state, and its records are dropped. */
  static final int MAX_RUNS_WITH_RECORDS = 20;
  /** Records a run keeps at most; past it every other worker step is dropped (evaluations are kept). */
  static final int MAX_RECORDS_PER_RUN = 100_000;

  private final KVStore store;
  /** Records held per run, and the runs in the order they first appeared (this store's writer only). */
  private final java.util.Map<String, Integer> held = new java.util.LinkedHashMap<>();

  public RunStore(KVStore store) {
    this.store = store;
  }

  void write(SparkPsEvents.RunUpdate update) {
    write(new RunEntry(update));
  }

  /**
   * Adds a run's records. A run past {@link #MAX_RECORDS_PER_RUN} is thinned (every other worker
   * step dropped); past {@link #MAX_RUNS_WITH_RECORDS} runs, the oldest run's records are dropped.
   */
  synchronized void write(SparkPsEvents.StepsRecorded steps) {
    write(new StepsEntry(steps));
    int now = held.merge(steps.runId, steps.rows.size(), Integer::sum);
    if (now > MAX_RECORDS_PER_RUN) {
      held.put(steps.runId, thin(steps.runId));
    }
    if (held.size() > MAX_RUNS_WITH_RECORDS) {
      String oldest = held.keySet().iterator().next();
      held.remove(oldest);
      for (StepsEntry c : chunks(oldest)) {
        delete(c);
      }
    }
  }

  /** Drops every other worker step of run {@code runId}; returns the records left. */
  private int thin(String runId) {
    int left = 0;
    boolean drop = false;
    for (StepsEntry c : chunks(runId)) {
      List<SparkPsEvents.StepRow> kept = new ArrayList<>();
      for (SparkPsEvents.StepRow r : c.rows) {
        if (!"EVALUATOR".equals(r.role) && (drop = !drop)) {
          continue;
        }
        kept.add(r);
      }
      c.rows = kept;
      write(c);
      left += kept.size();
    }
    return left;
  }

  private void delete(StepsEntry c) {
    try {
      store.delete(StepsEntry.class, c.id());
    } catch (Exception e) {
      throw new IllegalStateException("cannot drop SparkPS run " + c.runId + "'s records from Spark's status store", e);
    }
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
    List<SparkPsEvents.StepRow> out = new ArrayList<>();
    chunks(runId).forEach(c -> out.addAll(c.rows));
    return out;
  }

  private List<StepsEntry> chunks(String runId) {
    List<StepsEntry> chunks = new ArrayList<>();
    try {
      KVStoreView<StepsEntry> view = store.view(StepsEntry.class).index("run").first(runId).last(runId);
      view.forEach(chunks::add);
    } catch (Exception e) {
      throw new IllegalStateException("cannot read SparkPS run " + runId + "'s records from Spark's status store", e);
    }
    chunks.sort(Comparator.comparingLong(c -> c.first));
    return chunks;
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
