package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.google.flatbuffers.FlatBufferBuilder;
import java.io.InputStream;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.nd4j.graph.FlatArray;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * ND4J 1.0.0-M2.1 was generated against flatbuffers-java 1.12; Spark 4's Arrow brings 25.x, which
 * then is the one on the class path (Maven picks it for the Spark 4 build, and Spark's jars come
 * first under spark-submit). ND4J's own flatbuffers code must still work with the one present.
 */
class FlatBuffersTest {
  @Test
  void nd4jArrays_roundTripThroughTheFlatBuffersOnTheClassPath() throws Exception {
    String version;
    try (InputStream in = FlatBufferBuilder.class.getResourceAsStream(
        "/META-INF/maven/com.google.flatbuffers/flatbuffers-java/pom.properties")) {
      assertNotNull(in, "flatbuffers-java's pom.properties");
      Properties p = new Properties();
      p.load(in);
      version = p.getProperty("version");
    }
    String spark = org.apache.spark.package$.MODULE$.SPARK_VERSION();
    assertEquals(spark.startsWith("3.") ? "1.12.0" : "25.2.10", version,
        "the flatbuffers-java this build runs ND4J with, on Spark " + spark);

    INDArray original = Nd4j.rand(DataType.FLOAT, 7, 5).subi(0.5);
    FlatBufferBuilder builder = new FlatBufferBuilder(1024);
    builder.finish(original.toFlatArray(builder));
    FlatArray flat = FlatArray.getRootAsFlatArray(builder.dataBuffer());
    INDArray restored = Nd4j.createFromFlatArray(flat);
    assertEquals(original, restored, "through flatbuffers-java " + version);
  }
}
