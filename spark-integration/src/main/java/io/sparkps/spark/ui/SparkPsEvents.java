package io.sparkps.spark.ui;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * The events a run posts on Spark's listener bus: what the SparkPS tab shows, live and, from the
 * event log, in the History Server. Spark writes them to the event log as JSON (Jackson, with the
 * class name in its {@code Event} field) and reads them back with these classes: public fields,
 * no-argument constructors, nothing but strings, numbers, lists and maps, so that a log written by
 * one SparkPS version reads in another (unknown fields are ignored).
 */
public final class SparkPsEvents {
  private SparkPsEvents() {}

  /** A role instance as the driver last heard from it. */
  public static final class RoleRow {
    public String role;
    public int index;
    public String host;
    public String executor;
    public int attempt;
    public long step;
    /** How long before the update it was last heard from. */
    public long heardMillisAgo;
    /** "running", "finished", "silent" (past two heartbeats), "lost" (a ps declared lost). */
    public String state;

    public RoleRow() {}
  }

  /** A ps shard: where it serves, what it holds, how often it was replaced. */
  public static final class ShardRow {
    public int index;
    public String address;
    public int variables;
    public long parameterBytes;
    public long version;
    public int recoveries;

    public ShardRow() {}
  }

  /** A ps loss and how it came back. */
  public static final class RecoveryRow {
    public int ps;
    public String lostAddress;
    public String reason;
    public long atStep;
    public String replacement;
    public String refilledFrom;
    public long downtimeMillis;

    public RecoveryRow() {}
  }

  /** An attempt of the barrier stage and what ended it (null: it completed or still runs). */
  public static final class AttemptRow {
    public int attempt;
    public String endedBy;

    public AttemptRow() {}
  }

  /** A run's state: posted when it starts, every few seconds while it runs, and at its end. */
  public static final class RunUpdate implements SparkListenerEvent {
    public String runId;
    public String name;
    public String status;
    public String cause;
    public long startedMillis;
    public long elapsedMillis;
    public int numPs;
    public int numWorkers;
    public boolean evaluator;
    public long recordsNotKept;
    public List<RoleRow> roles = new ArrayList<>();
    public List<ShardRow> shards = new ArrayList<>();
    public List<AttemptRow> attempts = new ArrayList<>();
    public List<RecoveryRow> recoveries = new ArrayList<>();

    public RunUpdate() {}
  }

  /** A recorded step of a worker, or a report of the evaluator. */
  public static final class StepRow {
    public String role;
    public int index;
    public long step;
    public long examples;
    public long timeMillis;
    public Map<String, Double> metrics;

    public StepRow() {}
  }

  /** Records of a run's progress since its previous {@code StepsRecorded}, oldest first. */
  public static final class StepsRecorded implements SparkListenerEvent {
    public String runId;
    /** The number of the first record (records are numbered from 0 per run, in arrival order). */
    public long first;
    public List<StepRow> rows = new ArrayList<>();

    public StepsRecorded() {}
  }
}
