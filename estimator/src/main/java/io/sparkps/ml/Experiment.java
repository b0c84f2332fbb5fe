package io.sparkps.ml;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.TrainingConfigBuilder;
import java.io.Serializable;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;

/**
 * A network with its {@link TrainSpec} and optional {@link EvalSpec}, and the cluster to train it
 * on (workers, ps), as tf-yarn's Experiment: everything a run needs, serializable, so it can be
 * shipped to a driver elsewhere (YARN). {@link #estimator()} makes the equivalent Spark ML
 * estimator; {@link #fitAsync(SparkSession)} reads the specs' inputs and trains.
 */
public final class Experiment implements Serializable {
  private static final long serialVersionUID = 1L;
  private final String networkJson;
  private final TrainSpec train;
  private final EvalSpec eval;
  private final int numWorkers;
  private final int numPs;

  private Experiment(Builder b) {
    networkJson = b.networkJson;
    train = b.train;
    eval = b.eval;
    numWorkers = b.numWorkers != null ? b.numWorkers : b.train.config().numWorkers();
    numPs = b.numPs != null ? b.numPs : b.train.config().numPs();
  }

  /** A builder; the network and the TrainSpec are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The network's configuration as JSON. */
  public String networkJson() {
    return networkJson;
  }

  /** How to train. */
  public TrainSpec trainSpec() {
    return train;
  }

  /** How to evaluate, or null. */
  public EvalSpec evalSpec() {
    return eval;
  }

  /** Workers, the chief included. */
  public int numWorkers() {
    return numWorkers;
  }

  /** Parameter servers. */
  public int numPs() {
    return numPs;
  }

  /** The Spark ML estimator with this experiment's settings (use it on DataFrames of your own). */
  public Dl4jEstimator estimator() {
    TrainingConfigBuilder config = train.config().toBuilder().optNumWorkers(numWorkers).optNumPs(numPs);
    if (eval != null) {
      config.optEvalEverySeconds(eval.throttleSeconds()).optEvalDeferred(eval.deferred());
    }
    Dl4jEstimator e = new Dl4jEstimator().setNetworkJson(networkJson()).setConfig(config.build());
    e.experimentRecord = record();
    return e;
  }

  /**
   * Reads the TrainSpec's input (and the EvalSpec's, limited to its maxRows) and starts training;
   * returns at once with the job.
   */
  public FitJob fitAsync(SparkSession spark) {
    if (train.input() == null) {
      throw new IllegalArgumentException("the TrainSpec has no input: set TrainSpec.builder().optInput(spark -> ...) "
          + "or call estimator().fit(dataFrame)");
    }
    Dataset<Row> data = train.input().load(spark);
    Dataset<Row> held = eval == null || eval.input() == null ? null : eval.input().load(spark).limit(eval.maxRows());
    return estimator().fitAsync(data, held);
  }

  /** {@link #fitAsync} and wait for the model. */
  public Dl4jModel fit(SparkSession spark) throws InterruptedException {
    return fitAsync(spark).join();
  }

  /** The specs as text, for the model's provenance. */
  Map<String, String> record() {
    Map<String, String> out = new TreeMap<>();
    out.put("experiment.train", train.toString());
    out.put("experiment.eval", eval == null ? "none" : eval.toString());
    out.put("experiment.cluster", numWorkers + " workers, " + numPs + " ps");
    return out;
  }

  @Override
  public String toString() {
    return "Experiment{" + train + ", " + (eval == null ? "no evaluation" : eval) + ", " + numWorkers + " workers, "
        + numPs + " ps}";
  }

  /** Builds an {@link Experiment}. */
  public static final class Builder {
    private String networkJson;
    private TrainSpec train;
    private EvalSpec eval;
    private Integer numWorkers;
    private Integer numPs;

    private Builder() {}

    /** The network. */
    public Builder setNetwork(MultiLayerConfiguration conf) {
      networkJson = conf.toJson();
      return this;
    }

    /** The network, a graph with one input and one output. */
    public Builder setNetwork(ComputationGraphConfiguration conf) {
      networkJson = conf.toJson();
      return this;
    }

    /** The network as JSON (either configuration's {@code toJson()}). */
    public Builder setNetworkJson(String json) {
      Net.fromJson(Objects.requireNonNull(json, "network JSON")); // fails here, naming the problem
      networkJson = json;
      return this;
    }

    /** How to train. */
    public Builder setTrainSpec(TrainSpec spec) {
      train = Objects.requireNonNull(spec, "train spec");
      return this;
    }

    /** How to evaluate while training. */
    public Builder optEvalSpec(EvalSpec spec) {
      eval = Objects.requireNonNull(spec, "eval spec");
      return this;
    }

    /** Workers (>= 1) and parameter servers (>= 1); by default the TrainSpec config's (2 and 1 unless set there). */
    public Builder optCluster(int workers, int ps) {
      numWorkers = TrainSpec.Builder.atLeast(workers, 1, "workers");
      numPs = TrainSpec.Builder.atLeast(ps, 1, "ps");
      return this;
    }

    /** The experiment. */
    public Experiment build() {
      if (networkJson == null) {
        throw new IllegalArgumentException("the experiment has no network: call setNetwork(conf)");
      }
      if (train == null) {
        throw new IllegalArgumentException("the experiment has no TrainSpec: call setTrainSpec(TrainSpec.builder()...)");
      }
      return new Experiment(this);
    }
  }
}
