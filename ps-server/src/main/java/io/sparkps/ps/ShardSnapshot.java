package io.sparkps.ps;

/**
 * One shard's snapshot file as it was written: what a checkpoint's marker records, and what a
 * restore checks the file against.
 *
 * @param shard the ps index
 * @param file the file's name in the snapshot directory
 * @param bytes its size
 * @param sha256 its SHA-256, in hex
 * @param tablesNeeds every directory a restore of this snapshot reads besides its own: the saves its
 *     embedding tables' deltas build on, back to their full saves (none when every table was saved
 *     whole, or it has none). A checkpoint kept needs these kept too.
 */
public record ShardSnapshot(int shard, String file, long bytes, String sha256, java.util.List<String> tablesNeeds) {
  /** Copies the list; null reads as none. */
  public ShardSnapshot {
    tablesNeeds = tablesNeeds == null ? java.util.List.of() : java.util.List.copyOf(tablesNeeds);
  }

  /** A snapshot whose tables (if any) are whole. */
  public ShardSnapshot(int shard, String file, long bytes, String sha256) {
    this(shard, file, bytes, sha256, java.util.List.of());
  }
}
