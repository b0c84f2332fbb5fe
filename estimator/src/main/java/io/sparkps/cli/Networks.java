package io.sparkps.cli;

import io.sparkps.ml.NetworkPresets;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The {@code --network} argument: a preset sized to the data ({@link NetworkPresets}), a compiled
 * tf.keras model's {@code .h5} file ({@code keras:PATH}) or a file holding a DL4J configuration's JSON
 * (or a Keras model's, as {@code sparkps.ml.keras.model_json} writes it).
 */
final class Networks {
  private Networks() {}

  /** The network's JSON for {@code spec}, with {@code inputs} features and {@code classes} classes. */
  static String resolve(String spec, long inputs, int classes, long seed, double learningRate) {
    if (NetworkPresets.isPreset(spec)) {
      try {
        return NetworkPresets.json(spec, inputs, classes, seed, learningRate);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--network " + e.getMessage(), e);
      }
    }
    if (io.sparkps.ml.KerasNetworks.isFileSpec(spec)) {
      try {
        return io.sparkps.ml.KerasNetworks.fromFileSpec(spec, new org.apache.hadoop.conf.Configuration(), seed);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--network " + e.getMessage(), e);
      }
    }
    Path file = Path.of(spec);
    if (!Files.isRegularFile(file)) {
      throw new UsageException("--network " + spec + ": neither a preset (mlp, mlp:H1,H2,..., lenet), a Keras model "
          + "(keras:model.h5) nor a file");
    }
    String json;
    try {
      json = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UsageException("--network " + spec + ": cannot read it (" + e.getMessage() + ")", e);
    }
    if (io.sparkps.ml.KerasNetworks.isKeras(json)) {
      try {
        return io.sparkps.ml.KerasNetworks.toDl4jJson(json, seed);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--network " + spec + ": " + e.getMessage(), e);
      }
    }
    try {
      io.sparkps.ml.Experiment.builder().setNetworkJson(json); // builds the network: fails on what DL4J cannot read
    } catch (RuntimeException e) {
      throw new UsageException("--network " + spec + ": not a DL4J MultiLayerConfiguration or "
          + "ComputationGraphConfiguration JSON (" + SparkPsCli.firstLine(e.getMessage()) + ")", e);
    }
    return json;
  }

  /** The hidden layers' sizes of an {@code mlp} spec. */
  static int[] hidden(String spec) {
    try {
      return NetworkPresets.hidden(spec);
    } catch (IllegalArgumentException e) {
      throw new UsageException("--network " + e.getMessage(), e);
    }
  }
}
