package io.sparkps.ps;

/**
 * An embedding table's shard holds as many rows as it may and a new id arrived, with no eviction
 * configured or no row old enough to evict. Its message names the table, the shard, the limit and
 * the ways out: a larger limit, more parameter servers, an eviction age, or hashed ids.
 */
public final class EmbeddingTableFullException extends PsException {
  private static final long serialVersionUID = 1L;
  private final String table;
  private final int shard;
  private final long maxRows;

  /** The table {@code table}'s shard {@code shard} is full at {@code maxRows} rows. */
  public EmbeddingTableFullException(String table, int shard, long maxRows, String eviction) {
    super("embedding table '" + table + "' is full on ps " + shard + ": it holds its limit of " + maxRows
        + " rows and a new id arrived (" + eviction + "); raise its maxRows, add parameter servers, set an "
        + "eviction age, or hash its ids into a fixed number of buckets", null);
    this.table = table;
    this.shard = shard;
    this.maxRows = maxRows;
  }

  /** The table's name. */
  public String table() {
    return table;
  }

  /** The full shard. */
  public int shard() {
    return shard;
  }

  /** The shard's row limit. */
  public long maxRows() {
    return maxRows;
  }
}
