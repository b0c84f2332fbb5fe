package io.sparkps.ml.training;

import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.scoring.ModelScoring;
import io.sparkps.ps.PsClient;
import io.sparkps.spark.WorkerContext;
import java.io.Serializable;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * What a model trains on, and how a worker turns its partition into steps: a dense network reads
 * a features column ({@link DenseInputs}); an embedding model reads categorical columns through
 * tables on the parameter servers ({@code io.sparkps.ml.embedding}). The trainer, its workers and
 * its evaluator hold one and never ask which. Made on the driver, shipped with the workers'
 * function.
 */
public interface ModelInputs extends Serializable {
  /** Checks the data's columns against the network {@code probe} and counts rows per partition, in one job. */
  InputChecks.Partitions check(Dataset<Row> data, TrainingConfig config, Net probe, LabelKind kind);

  /** The rows the workers read, as {@link #read} takes them. */
  Dataset<Row> rowsToTrain(Dataset<Row> data, TrainingConfig config);

  /** Whether the network's first layer must compute its input's gradient (reading it is the model's). */
  boolean needsInputGradient();

  /**
   * The held-out rows of {@code evaluation}, checked like training rows and broadcast through
   * {@code sc}, for an evaluator that scores {@code deferred} or not.
   */
  HeldOut heldOut(JavaSparkContext sc, Dataset<Row> evaluation, TrainingConfig config, Net probe, boolean deferred);

  /**
   * On the driver once training has ended, with the shards' final state in {@code ps} (or their
   * state restored from the latest checkpoint): keeps what the model needs beside its parameters.
   */
  void export(PsClient ps);

  /**
   * How the trained model scores: its network's input read as this model reads it, from what
   * {@link #export} kept of {@code numPs} ps whose tables were in consistency group {@code group}.
   */
  ModelScoring scoring(int numPs, String group);

  /** Reads worker {@code ctx}'s partition, on its task thread (its network is built meanwhile on another). */
  WorkerData read(WorkerContext<Row> ctx, WorkerPlan plan);

  /** What every worker of a run trains with: its settings, the label's kind and the network's shape. */
  record WorkerPlan(TrainingConfig config, LabelKind labelKind, int inputs, int outputs, int stepsPerEpoch)
      implements Serializable {}

  /** One worker's partition, read; closing it frees what it holds (memory, a spill file). */
  interface WorkerData extends AutoCloseable {
    /** The steps on this partition of {@code net}, whose {@code variables} are ready on the servers. */
    Steps steps(WorkerContext<Row> ctx, Net net, NetworkVariables variables, WorkerPlan plan);

    @Override
    void close();
  }

  /** A worker's steps on its partition, an epoch at a time. */
  interface Steps extends AutoCloseable {
    /** The minibatches of {@code epoch}, from its {@code from}-th (a resumed run starts within one). */
    Epoch epoch(int epoch, int from);

    /**
     * On the chief once every worker is done: the trained parameters, or null when the driver
     * reads them from the shards. It may when {@code checkpointed} (the last step's checkpoint was
     * saved): a ps lost before that read is read from the checkpoint instead.
     */
    float[] result(boolean checkpointed);

    @Override
    void close();
  }

  /** The steps of one epoch. */
  interface Epoch extends AutoCloseable {
    boolean hasNext();

    /**
     * Runs the step of this worker's minibatch {@code done} (counted over the run) of {@code total},
     * and returns its metrics as the run records them.
     */
    Map<String, Double> next(long done, long total);

    @Override
    void close();
  }

  /** The evaluator's held-out rows (broadcast once, not shipped with its task). */
  interface HeldOut extends Serializable {
    /** How many rows. */
    int rows();

    /**
     * The rows as input to {@code net}, with the variables just pulled from {@code ps} (an
     * embedding model reads its tables' rows of the same moment).
     */
    org.nd4j.linalg.dataset.DataSet read(Net net, PsClient ps);

    /** Frees the broadcast rows (the driver calls it when the run has ended). */
    void release();
  }
}
