package io.sparkps.ps;

/** Every case of {@link EmbeddingTableTest} with the rows on the ps's bulk ports over TLS, the run's certificate pinned. */
class EmbeddingTableTlsTest extends EmbeddingTableTest {
  @Override
  String transport() {
    return "tls";
  }
}
