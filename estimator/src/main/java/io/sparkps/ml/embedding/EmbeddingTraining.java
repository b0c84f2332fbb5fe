package io.sparkps.ml.embedding;

import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.scoring.ModelScoring;
import io.sparkps.ml.training.DataConf;
import io.sparkps.ml.training.InputChecks;
import io.sparkps.ml.training.ModelInputs;
import io.sparkps.ml.training.PsTrainingStep;
import io.sparkps.ml.training.StepMetrics;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.TableRefill;
import io.sparkps.spark.WorkerContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embedding model's inputs: a label and categorical (and numeric) columns, whose ids are rows
 * of tables on the parameter servers. A worker reads its partition into categorical rows, in
 * memory or beyond {@code limits} in a spill file ({@link CategoricalPartition}), and each step
 * pulls the minibatch's table rows, runs the dense step on them and pushes the rows' gradients
 * ({@link EmbeddingStep}). At the end, each ps writes its share of every table into
 * {@link #tablesDir()}, where the model finds them.
 *
 * @param inputs the embedding columns and the numeric ones
 * @param tablesDir where the trained tables go at the end (a Hadoop path)
 * @param limits how much of a worker's partition stays in memory, and the shuffle window of a spilled one
 */
public record EmbeddingTraining(EmbeddingInputs inputs, String tablesDir, Minibatches.Limits limits)
    implements ModelInputs {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddingTraining.class);

  /**
   * The training of {@code inputs}: its tables go below {@code checkpointDir} when set, else
   * (local Spark only) into a temporary directory deleted when this JVM exits.
   */
  public static EmbeddingTraining of(SparkSession spark, EmbeddingInputs inputs, String checkpointDir) {
    String run = "model-tables-" + UUID.randomUUID();
    if (checkpointDir != null) {
      return new EmbeddingTraining(inputs, new org.apache.hadoop.fs.Path(checkpointDir, run).toString(),
          DataConf.limits(spark));
    }
    if (!spark.sparkContext().isLocal()) {
      throw new IllegalArgumentException("embedding columns need a directory every executor and the driver reach, to "
          + "hand the trained tables to the model: set checkpointDir (a Hadoop path, e.g. on HDFS)");
    }
    try {
      java.nio.file.Path dir = Files.createTempDirectory("sparkps-" + run);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir), "sparkps-delete-" + run));
      return new EmbeddingTraining(inputs, dir.toUri().toString(), DataConf.limits(spark));
    } catch (IOException e) {
      throw new UncheckedIOException("could not make a temporary directory for the trained tables", e);
    }
  }

  private static void deleteTree(java.nio.file.Path dir) {
    try (java.util.stream.Stream<java.nio.file.Path> all = Files.walk(dir)) {
      all.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException ignored) {
      // best effort at exit
    }
  }

  /** The model reads the tables that {@code numPs} ps exported, in consistency group {@code group}. */
  @Override
  public ModelScoring scoring(int numPs, String group) {
    return new TableScoring(new EmbeddingModels.Tables(inputs, tablesDir, numPs, group));
  }

  /** Checks the columns and the network's input width, and counts the rows of each partition. */
  @Override
  public InputChecks.Partitions check(Dataset<Row> data, TrainingConfig s, Net probe, LabelKind kind) {
    inputs.check(data.schema());
    if (!(data.schema().apply(s.labelCol()).dataType() instanceof org.apache.spark.sql.types.NumericType)) {
      throw new IllegalArgumentException("the label column '" + s.labelCol() + "' is " + data.schema()
          .apply(s.labelCol()).dataType().simpleString() + "; an embedding model takes a number per row (a class "
          + "index, 0/1 for one output unit, or a regression target)");
    }
    if (probe.inputWidth() != inputs.width()) {
      throw new IllegalArgumentException("the network's first layer takes " + probe.inputWidth() + " inputs, but the "
          + "embedding columns' dims add up to " + inputs.embeddingWidth() + " and there are "
          + inputs.numericCols().size() + " numeric columns" + (inputs.wide() ? ", " + inputs.columns().size()
          + " wide weights" : "") + (inputs.factorization() ? " and the factorization term" : "") + ": set its nIn "
          + "to " + inputs.width());
    }
    List<Long> counts = rowsToTrain(data, s).javaRDD().mapPartitions(it -> {
      long n = 0;
      while (it.hasNext()) {
        it.next();
        n++;
      }
      return List.of(n).iterator();
    }).collect();
    return new InputChecks.Partitions(counts.stream().mapToLong(Long::longValue).toArray());
  }

  /** The columns a worker reads, in its order: the label, then the inputs. */
  @Override
  public Dataset<Row> rowsToTrain(Dataset<Row> data, TrainingConfig s) {
    List<Column> cols = new ArrayList<>(List.of(functions.col(s.labelCol())));
    inputs.names().forEach(n -> cols.add(functions.col(n)));
    return data.select(cols.toArray(new Column[0]));
  }

  /** The input's gradient is the table rows' gradient. */
  @Override
  public boolean needsInputGradient() {
    return true;
  }

  /** The held-out rows read into categorical rows, then broadcast; the evaluator reads the tables' rows for them. */
  @Override
  public HeldOut heldOut(JavaSparkContext sc, Dataset<Row> evaluation, TrainingConfig config, Net probe,
      boolean deferred) {
    if (deferred) {
      throw new IllegalArgumentException("evalDeferred does not go with embedding columns yet (a copy of the tables per "
          + "evaluation): set evalDeferred false");
    }
    List<Row> rows = rowsToTrain(evaluation, config).collectAsList();
    if (rows.isEmpty()) {
      throw new IllegalArgumentException("the evaluation DataFrame is empty: give held-out rows or no evaluation data");
    }
    CategoricalRows held = EmbeddingStep.read(rows.iterator(), inputs, probe.classification(), (int) probe.outputs(),
        -1);
    return new Held(sc.broadcast(held), config.tablesGroup(config.numWorkers()));
  }

  /** Each ps writes its share of every table into {@link #tablesDir()}, never through the driver. */
  @Override
  public void export(PsClient ps) {
    ps.export(tablesDir);
  }

  /** The partition read into categorical rows, in memory or, beyond {@link #limits}, a spill file. */
  @Override
  public WorkerData read(WorkerContext<Row> ctx, WorkerPlan plan) {
    // Read once into memory or a spill file that is deleted when the task ends, however it ends.
    CategoricalPartition data = CategoricalPartition.read(ctx.data(), inputs, plan.labelKind() != LabelKind.VALUES,
        plan.outputs(), ctx.index(), limits, DataConf.spillDir(ctx.index()));
    if (data.spillFile() != null) {
      String spilled = DataConf.spilled(ctx.index(), data.rows(), data.spillFile(), data.spilledBytes(), limits);
      LOG.info(spilled);
      ctx.progress().message(spilled);
    }
    return new WorkerData() {
      @Override
      public Steps steps(WorkerContext<Row> ctx, Net net, NetworkVariables variables, WorkerPlan plan) {
        return new TableSteps(ctx, net, variables, plan, data);
      }

      @Override
      public void close() {
        data.close();
      }
    };
  }

  /** A worker's steps: each pulls the minibatch's table rows, steps, and pushes their gradients. */
  private final class TableSteps implements Steps {
    private final WorkerContext<Row> ctx;
    private final TrainingConfig config;
    private final WorkerPlan plan;
    private final CategoricalPartition data;
    private final EmbeddingStep step;
    private final StepMetrics metrics;

    TableSteps(WorkerContext<Row> ctx, Net net, NetworkVariables variables, WorkerPlan plan,
        CategoricalPartition data) {
      this.ctx = ctx;
      this.config = plan.config();
      this.plan = plan;
      this.data = data;
      PsClient ps = ctx.ps();
      String checkpoints = config.checkpointDir();
      if (checkpoints != null) {
        // No worker holds a copy of a table: a replaced ps gets its rows back from the newest checkpoint.
        GrpcPsClient.of(ps).setTableRefill(() -> Checkpoints.latest(checkpoints)
            .map(m -> new TableRefill.Checkpoint(m.path(), m.step())).orElse(null));
      }
      TableLookup lookup = new TableLookup(inputs, ps, config.tablesGroup(ctx.numWorkers()));
      this.step = new EmbeddingStep(new PsTrainingStep(net, variables, ps), lookup, net.miniBatch());
      this.metrics = new StepMetrics(ps);
    }

    @Override
    public Epoch epoch(int epoch, int from) {
      Iterator<CategoricalPartition.Batch> batches = data.epoch(epoch, from, plan.stepsPerEpoch(), config.batchSize(),
          config.seed() + ctx.index());
      return new Epoch() {
        @Override
        public boolean hasNext() {
          return batches.hasNext();
        }

        /** tableBytes, tableKeys: the table pulls' and pushes' payload bytes and the unique keys pulled, so far. */
        @Override
        public Map<String, Double> next(long done, long total) {
          double loss = step.step(batches.next(), done, epoch);
          return metrics.of(loss, epoch, step.dense(), 0, step.tableMillis(), Map.of("tableBytes",
              (double) ctx.ps().tableBytes(), "tableKeys", (double) step.keysPulled()));
        }

        @Override
        public void close() {
          // nothing read ahead
        }
      };
    }

    /** The driver reads the parameters and exports the tables ({@link #export}). */
    @Override
    public float[] result(boolean checkpointed) {
      return null;
    }

    @Override
    public void close() {
      step.dense().close();
    }
  }

  /** An embedding model's held-out rows, whose tables' rows are read at each evaluation. */
  private static final class Held implements HeldOut {
    private static final long serialVersionUID = 1L;
    private final Broadcast<CategoricalRows> rows;
    /** The consistency group of the tables, as the workers made them (their specs name it). */
    private final String tablesGroup;
    /** Made once the workers have made the tables and their group (the variables' version moved). */
    private transient TableLookup lookup;

    Held(Broadcast<CategoricalRows> rows, String tablesGroup) {
      this.rows = rows;
      this.tablesGroup = tablesGroup;
    }

    @Override
    public int rows() {
      return rows.value().size();
    }

    /** The rows as the network's input now: their table rows read (never created), pooled. */
    @Override
    public DataSet read(Net net, PsClient ps) {
      CategoricalRows held = rows.value();
      if (lookup == null) {
        lookup = new TableLookup(held.inputs(), ps, tablesGroup);
      }
      int[] all = java.util.stream.IntStream.range(0, held.size()).toArray();
      float[] x = lookup.features(lookup.pull(held, all, 0, false));
      float[] labels = java.util.Arrays.copyOf(held.labels(), held.size() * held.labelWidth());
      return new DataSet(Nd4j.create(x, new long[] {held.size(), held.inputs().width()}, 'c'),
          Nd4j.create(labels, new long[] {held.size(), held.labelWidth()}, 'c'));
    }

    @Override
    public void release() {
      rows.destroy();
    }
  }
}
