package io.sparkps.ml.training;

import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.data.Origins;
import io.sparkps.ml.data.Prefetched;
import io.sparkps.ml.data.Schemas;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.scoring.DenseScoring;
import io.sparkps.ml.scoring.ModelScoring;
import io.sparkps.ps.PsClient;
import io.sparkps.spark.SparkPsConf;
import io.sparkps.spark.WorkerContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dense network's inputs: a features column of vectors and a label column. A worker reads its
 * partition into minibatches in memory or a spill file ({@link Minibatches}), builds the next one
 * while a step waits for the servers, and steps with {@link PsTrainingStep}, its transfers
 * overlapping the passes where that pays ({@link #overlaps}).
 */
public final class DenseInputs implements ModelInputs {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(DenseInputs.class);
  /** Longest the wait for one minibatch may take (read from memory or a local spill file). */
  private static final Duration BATCH_TIMEOUT = Duration.ofMinutes(10);
  private final Minibatches.Limits limits;
  /** {@code auto}, {@code true} or {@code false}: see {@link #overlaps}. */
  private final String overlapTransfers;

  private DenseInputs(Minibatches.Limits limits, String overlapTransfers) {
    this.limits = limits;
    this.overlapTransfers = overlapTransfers;
  }

  /** A dense network's inputs, held and transferred as {@code spark}'s settings say. */
  public static DenseInputs of(SparkSession spark) {
    return new DenseInputs(DataConf.limits(spark), SparkPsConf.TRAIN_OVERLAP_TRANSFERS.get(spark.conf()));
  }

  @Override
  public InputChecks.Partitions check(Dataset<Row> data, TrainingConfig s, Net probe, LabelKind kind) {
    return InputChecks.check(data, s.featuresCol(), s.labelCol(), probe.inputWidth(), kind, probe.outputs());
  }

  /** Each row carries its place in the input through any shuffle, so that a bad row is named where it is. */
  @Override
  public Dataset<Row> rowsToTrain(Dataset<Row> data, TrainingConfig s) {
    return Origins.tag(data, s.featuresCol(), s.labelCol());
  }

  @Override
  public boolean needsInputGradient() {
    return false;
  }

  @Override
  public HeldOut heldOut(JavaSparkContext sc, Dataset<Row> evaluation, TrainingConfig config, Net probe,
      boolean deferred) {
    String featuresCol = config.featuresCol();
    String labelCol = config.labelCol();
    LabelKind kind = Schemas.labelKind(evaluation.schema(), labelCol, probe.classification(), probe.outputs());
    List<Row> rows = evaluation.select(featuresCol, labelCol).collectAsList();
    if (rows.isEmpty()) {
      throw new IllegalArgumentException("the evaluation DataFrame is empty: give held-out rows or no evaluation data");
    }
    Minibatches checked = Minibatches.of(rows.iterator(), -1, featuresCol, labelCol, (int) probe.inputWidth(), kind,
        (int) probe.outputs());
    return new Held(sc.broadcast(new Rows(checked.features(), checked.labels(), checked.size())));
  }

  @Override
  public void export(PsClient ps) {
    // the parameters are all a dense model keeps
  }

  @Override
  public ModelScoring scoring(int numPs, String group) {
    return DenseScoring.INSTANCE;
  }

  @Override
  public WorkerData read(WorkerContext<Row> ctx, WorkerPlan plan) {
    // Read once into memory or a spill file that is deleted when the task ends, however it ends.
    TrainingConfig config = plan.config();
    Minibatches data = Minibatches.of(ctx.data(), ctx.index(), config.featuresCol(), config.labelCol(), plan.inputs(),
        plan.labelKind(), plan.outputs(), limits, DataConf.spillDir(ctx.index()));
    if (data.spillFile() != null) {
      String spilled = DataConf.spilled(ctx.index(), data.rows(), data.spillFile(), data.spilledBytes(), limits);
      LOG.info(spilled);
      ctx.progress().message(spilled);
    }
    return new WorkerData() {
      @Override
      public Steps steps(WorkerContext<Row> ctx, Net net, NetworkVariables variables, WorkerPlan plan) {
        return new DenseSteps(ctx, net, variables, plan, data);
      }

      @Override
      public void close() {
        data.close();
      }
    };
  }

  /**
   * Whether a worker's transfers overlap its passes ({@link OverlappedTransfers}): {@code true},
   * {@code false}, or {@code auto}, when a ps serves on another host than the worker's
   * ({@code psAddresses} as host:port; an in-process one is on the worker's): there the transfers
   * wait on the network, while to the worker's own host they are copies that take the cores the
   * passes need.
   */
  static boolean overlaps(String setting, String host, List<String> psAddresses) {
    return switch (setting) {
      case "true" -> true;
      case "false" -> false;
      default -> psAddresses.stream().anyMatch(a -> !a.startsWith("inprocess:")
          && !a.substring(0, Math.max(0, a.lastIndexOf(':'))).equals(host));
    };
  }

  /** A worker's dense steps: with gradient accumulation, minibatches [first, first + of) make one step. */
  private final class DenseSteps implements Steps {
    private final WorkerContext<Row> ctx;
    private final Net net;
    private final TrainingConfig config;
    private final WorkerPlan plan;
    private final Minibatches data;
    private final PsTrainingStep step;
    private final StepMetrics metrics;

    DenseSteps(WorkerContext<Row> ctx, Net net, NetworkVariables variables, WorkerPlan plan, Minibatches data) {
      this.ctx = ctx;
      this.net = net;
      this.config = plan.config();
      this.plan = plan;
      this.data = data;
      this.step = new PsTrainingStep(net, variables, ctx.ps(), config.workerUpdates());
      this.metrics = new StepMetrics(ctx.ps());
      if (overlaps(overlapTransfers, ctx.host(), ctx.psAddresses()) && config.gradientAccumulation() == 1
          && !step.overlapTransfers("worker-" + ctx.index())) {
        LOG.info("SparkPS worker {}: transfers go between the passes (a layer of the network cannot be hooked)",
            ctx.index());
      }
    }

    /**
     * The next minibatch is built while a step waits for the servers, at its pull (closed before
     * the next epoch starts, which ends this one's batches), into the arrays of the batch before
     * last, whose step has ended: a step holds one batch and the prefetch makes one more.
     */
    @Override
    public Epoch epoch(int epoch, int from) {
      Prefetched<DataSet> batches = new Prefetched<>(data.epoch(epoch, from, plan.stepsPerEpoch(), config.batchSize(),
          config.seed() + ctx.index(), true), "sparkps-minibatches-worker-" + ctx.index(), BATCH_TIMEOUT);
      int perStep = config.gradientAccumulation();
      return new Epoch() {
        @Override
        public boolean hasNext() {
          return batches.hasNext();
        }

        @Override
        public Map<String, Double> next(long done, long total) {
          int position = (int) (done % perStep);
          long first = done - position;
          int of = (int) Math.min(perStep, total - first);
          long waitStart = System.nanoTime();
          DataSet batch = batches.next();
          double waitMillis = (System.nanoTime() - waitStart) / 1e6;
          if (position == 0 && done + 1 < total) {
            batches.prefetch();
          }
          double loss = step.step(batch, done, epoch, position, of);
          return metrics.of(loss, epoch, step, waitMillis, -1, Map.of());
        }

        @Override
        public void close() {
          batches.close();
        }
      };
    }

    /**
     * The parameters pulled once every worker's last push is in (with worker-side updates, what the
     * shards hold less the chief's own unsent updates), unless the last step's checkpoint was saved:
     * the driver then reads them from the shards, which costs less than shipping them as the task's
     * result, and reads that checkpoint if a ps is lost meanwhile. Without it (a run shorter than its
     * own checkpoints' spacing, or without checkpoints), a ps killed or hung after the last push
     * failed the run there; this pull recovers one lost before it as any step's pull does. With
     * bf16 transfers the pull would round them: the driver reads them at full precision.
     */
    @Override
    public float[] result(boolean checkpointed) {
      if (!config.workerUpdates() && (checkpointed || config.bf16Transfers())) {
        return null;
      }
      step.pull();
      return net.params().toFloatVector();
    }

    @Override
    public void close() {
      step.close();
    }
  }

  /** The held-out rows, a row of the input width and one of the output width per example. */
  record Rows(float[] features, float[] labels, int rows) implements java.io.Serializable {}

  /** A dense model's held-out rows, made into the network's input once. */
  private static final class Held implements HeldOut {
    private static final long serialVersionUID = 1L;
    private final Broadcast<Rows> rows;
    private transient DataSet data;

    Held(Broadcast<Rows> rows) {
      this.rows = rows;
    }

    @Override
    public int rows() {
      return rows.value().rows();
    }

    @Override
    public DataSet read(Net net, PsClient ps) {
      if (data == null) {
        Rows r = rows.value();
        data = new DataSet(Nd4j.create(r.features(), new long[] {r.rows(), net.inputWidth()}, 'c'),
            Nd4j.create(r.labels(), new long[] {r.rows(), net.outputs()}, 'c'));
      }
      return data;
    }

    @Override
    public void release() {
      rows.destroy();
    }
  }
}
