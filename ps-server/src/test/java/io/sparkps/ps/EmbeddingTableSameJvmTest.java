package io.sparkps.ps;

/** Every case of {@link EmbeddingTableTest} with the rows through memory, from a client in the ps's JVM (local Spark, or a worker beside its ps). */
class EmbeddingTableSameJvmTest extends EmbeddingTableTest {
  @Override
  String transport() {
    return "same-jvm";
  }
}
