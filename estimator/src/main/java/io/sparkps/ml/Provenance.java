package io.sparkps.ml;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.spark.ml.param.ParamPair;
import org.apache.spark.ml.param.Params;
import org.apache.spark.sql.types.StructType;

/**
 * How a model was made: SparkPS, Spark and DL4J versions, every param of the estimator (the seed
 * among them), the input schema and when. Saved with the model.
 */
final class Provenance {
  private Provenance() {}

  /** The record of a model trained by {@code estimator} on data of {@code schema}. */
  static Map<String, String> of(Params estimator, StructType schema, String sparkVersion) {
    Map<String, String> p = new TreeMap<>(versions());
    p.put("spark.runtime", sparkVersion);
    p.put("trained.at", Instant.now().toString());
    p.put("input.schema", schema.json());
    for (ParamPair<?> pair : scala.collection.JavaConverters.seqAsJavaList(estimator.extractParamMap().toSeq())) {
      Object v = pair.value();
      // an array param (numericCols) as its elements, not the array's identity
      p.put("param." + pair.param().name(), v instanceof Object[] a ? java.util.Arrays.toString(a)
          : v instanceof int[] a ? java.util.Arrays.toString(a) : v instanceof double[] a ? java.util.Arrays.toString(a)
          : String.valueOf(v));
    }
    return p;
  }

  /** The versions this build was made with. */
  static Map<String, String> versions() {
    Properties props = new Properties();
    try (InputStream in = Provenance.class.getResourceAsStream("versions.properties")) {
      if (in != null) {
        props.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> out = new TreeMap<>();
    props.forEach((k, v) -> out.put("version." + k, String.valueOf(v)));
    return out;
  }
}
