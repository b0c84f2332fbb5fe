package io.sparkps.ps.client;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.EmbeddingTableSet;
import io.sparkps.ps.spec.EmbeddingSpec;

/** One table: a set of one, whose calls are the table's. */
record OneTable(EmbeddingTableSet alone) implements EmbeddingTable {
  @Override
  public EmbeddingSpec spec() {
    return alone.specs().get(0);
  }

  @Override
  public float[] pull(long[] ids, long step) {
    return alone.pull(new long[][] {ids}, step)[0];
  }

  @Override
  public float[] read(long[] ids) {
    return alone.read(new long[][] {ids})[0];
  }

  @Override
  public void push(long[] ids, float[] gradients, long step) {
    alone.push(new long[][] {ids}, new float[][] {gradients}, step);
  }
}
