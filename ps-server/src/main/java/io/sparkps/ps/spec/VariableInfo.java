package io.sparkps.ps.spec;

import java.util.Arrays;

/**
 * What one shard holds of one variable: for debugging from a driver or a notebook.
 *
 * @param name the variable's name
 * @param shape the whole variable's shape
 * @param shard the ps shard holding this slice
 * @param rowStart first row (of the first dimension) held by this shard
 * @param rowEnd one past the last row held by this shard
 * @param version updates applied to this slice
 * @param initialized whether the slice has been initialized
 * @param group the consistency group
 * @param optimizer the optimizer's kind
 */
public record VariableInfo(
    String name,
    long[] shape,
    int shard,
    long rowStart,
    long rowEnd,
    long version,
    boolean initialized,
    String group,
    Optimizer optimizer) {

  @Override
  public String toString() {
    return String.format(
        "%s%s shard=%d rows=[%d,%d) version=%d initialized=%s group=%s optimizer=%s",
        name, Arrays.toString(shape), shard, rowStart, rowEnd, version, initialized, group, optimizer);
  }
}
