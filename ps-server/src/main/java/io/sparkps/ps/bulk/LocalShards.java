package io.sparkps.ps.bulk;

import java.security.MessageDigest;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shards serving in this JVM, by a random id that each announces in its hello reply. A
 * client that finds the id here, holding the same token, is in the shard's JVM and may move data
 * through memory; an id from another JVM is never found.
 */
final class LocalShards {
  private record Entry(byte[] token, ShardAccess access) {}

  private static final Map<String, Entry> SHARDS = new ConcurrentHashMap<>();

  private LocalShards() {}

  /** Registers a shard; returns its id. */
  static String register(byte[] token, ShardAccess access) {
    String id = UUID.randomUUID().toString();
    SHARDS.put(id, new Entry(token.clone(), access));
    return id;
  }

  static void unregister(String id) {
    SHARDS.remove(id);
  }

  /** The shard of {@code id} in this JVM, if there is one and it takes {@code token}. */
  static Optional<ShardAccess> find(String id, byte[] token) {
    Entry e = id.isEmpty() ? null : SHARDS.get(id);
    if (e == null || !MessageDigest.isEqual(e.token(), token)) {
      return Optional.empty();
    }
    return Optional.of(e.access());
  }
}
