package io.sparkps.ps;

/** Every case of {@link EmbeddingTableTest} with the rows in gRPC calls (a client told not to use the bulk ports, or one that cannot reach them). */
class EmbeddingTableOverGrpcTest extends EmbeddingTableTest {
  @Override
  String transport() {
    return "grpc";
  }
}
