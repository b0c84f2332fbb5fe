package io.sparkps.ps.spec;

/**
 * An embedding table's shard holds as many rows as it may and a new id arrived, with no eviction
 * configured or no row old enough to evict. Its message names the table, the ps, the limit and the
 * ways out: a larger limit, more parameter servers, an eviction age, or hashed ids. A client
 * throws it for the ps's answer, with the ps's message.
 */
public final class EmbeddingTableFullException extends PsException {
  private static final long serialVersionUID = 1L;

  /** An exception with {@code message} (see {@link #message}). */
  public EmbeddingTableFullException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The message for table {@code table}'s shard {@code shard}, full at {@code maxRows} rows. */
  public static String message(String table, int shard, long maxRows, String eviction) {
    return "embedding table '" + table + "' is full on ps " + shard + ": it holds its limit of " + maxRows
        + " rows and a new id arrived (" + eviction + "); raise its maxRows, add parameter servers, set an "
        + "eviction age, or hash its ids into a fixed number of buckets";
  }
}
