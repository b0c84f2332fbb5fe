package io.sparkps.ps;

/**
 * One shard's snapshot file as it was written: what a checkpoint's marker records, and what a
 * restore checks the file against.
 *
 * @param shard the ps index
 * @param file the file's name in the snapshot directory
 * @param bytes its size
 * @param sha256 its SHA-256, in hex
 */
public record ShardSnapshot(int shard, String file, long bytes, String sha256) {}
