package io.sparkps.ps;

import io.sparkps.ps.spec.EmbeddingSpec;
import java.util.List;

/**
 * Several embedding tables pulled and pushed together ({@link PsClient#embeddingTables}): a
 * minibatch's rows of all the tables come from each ps in one call and their gradients go back in
 * one, so a step costs one round trip per ps each way however many tables the model has. The calls
 * take each ps's bulk channel (its bulk port, or memory for a ps in this JVM) unless the client
 * sends rows over gRPC. Each id goes to the ps its hash places it on ({@link EmbeddingTable#shardOf}),
 * the ps in parallel; only the ids asked for travel. Pass each table's ids once per call (a
 * minibatch's unique ids, gradients summed). Thread-safe as its client is; closing the client ends it.
 */
public interface EmbeddingTableSet {
  /** The tables' specs, in the order of the arrays the calls take and return. */
  List<EmbeddingSpec> specs();

  /**
   * Each table's rows of its {@code ids} for training step {@code step} ({@code ids[t].length * dim}
   * floats, row after row): an id seen often enough gets a row of its own, one not admitted yet reads
   * the default row. A SYNC table's rows wait until every worker's step {@code step - 1} is applied
   * (SSP: until the slowest is within the staleness), at most the client's wait timeout.
   */
  float[][] pull(long[][] ids, long step);

  /** Each table's rows of its {@code ids} without creating any (inference): an id a table does not hold reads its default row. */
  float[][] read(long[][] ids);

  /**
   * Applies each table's {@code gradients[t]} ({@code ids[t].length * dim} floats, row after row) to
   * the rows of {@code ids[t]}: at once, or for a SYNC table with the other workers' of step
   * {@code step} (their mean, once every worker pushed the step; the push of a table that follows a
   * group reaches every ps, empty where it holds none of the ids, so each ps knows the worker's step is done).
   */
  void push(long[][] ids, float[][] gradients, long step);
}
