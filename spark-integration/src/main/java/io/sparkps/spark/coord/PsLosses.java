package io.sparkps.spark.coord;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * The ps-loss bookkeeping of a run: the addresses declared lost (each once) with their replacement
 * and refill, the ps a client found unreachable, and the launches the driver retired. Not thread-safe:
 * {@link Registry} guards it with its own monitor.
 */
final class PsLosses {
  private final List<PsLoss> losses = new ArrayList<>();
  /** Ps a client found unreachable, by index: when it first asked (cleared once the ps is heard from after). */
  private final Map<Integer, Long> suspects = new HashMap<>();
  /** The first attempt a ps may register with, by index: a relaunch retires the launches before it. */
  private final Map<Integer, Integer> firstAttempt = new HashMap<>();

  /** Records the loss of ps {@code index} at {@code address}; false when that address was declared lost already. */
  boolean declare(int index, String address, String reason, long atStep, long now) {
    if (isLost(index, address)) {
      return false;
    }
    losses.add(new PsLoss(index, address, reason, atStep, now, null, null, 0, 0));
    return true;
  }

  boolean isLost(int index, String address) {
    return lostAddresses().contains(index + "@" + address);
  }

  private Set<String> lostAddresses() {
    return losses.stream().map(l -> l.shard() + "@" + l.lostAddress()).collect(Collectors.toSet());
  }

  /** Records {@code address} as the replacement of ps {@code index}'s losses that have none yet. */
  void replaced(int index, String address) {
    for (int i = losses.size() - 1; i >= 0; i--) {
      PsLoss l = losses.get(i);
      if (l.shard() == index && l.replacement() == null) {
        losses.set(i, new PsLoss(l.shard(), l.lostAddress(), l.reason(), l.atStep(), l.lostNanos(), address, null, 0, 0));
      }
    }
  }

  /**
   * Records that {@code source} refilled ps {@code index} (now serving at {@code now}, if known) at
   * {@code step}: its latest loss, and any earlier one of it still awaiting a refill (a replacement
   * lost before anyone refilled it), which this refill makes good too. False when no loss of it awaited one.
   */
  boolean recovered(int index, String now, long step, String source, long nanos) {
    boolean latest = true;
    boolean any = false;
    for (int i = losses.size() - 1; i >= 0; i--) {
      PsLoss l = losses.get(i);
      if (l.shard() == index && l.source() == null) {
        losses.set(i, new PsLoss(l.shard(), l.lostAddress(), l.reason(), l.atStep(), l.lostNanos(),
            now == null || !latest ? l.replacement() : now, source, step, nanos));
        any = true;
      }
      latest &= l.shard() != index;
    }
    return any;
  }

  List<PsLoss> all() {
    return List.copyOf(losses);
  }

  /** Notes that a client found ps {@code index} unreachable at {@code asked} (the first time counts). */
  void suspect(int index, long asked) {
    suspects.putIfAbsent(index, asked);
  }

  /**
   * The registrations of the suspects not heard from since, for longer than {@code graceNanos};
   * {@code member} gives each index's current registration (or null).
   */
  List<Member> unreachable(long graceNanos, IntFunction<Member> member, long now) {
    suspects.entrySet().removeIf(e -> {
      Member m = member.apply(e.getKey());
      return m == null || m.lastSeenNanos() > e.getValue() || isLost(e.getKey(), m.address());
    });
    List<Member> out = new ArrayList<>();
    suspects.forEach((index, since) -> {
      if (now - since > graceNanos) {
        out.add(member.apply(index));
      }
    });
    return out;
  }

  /** Refuses, from now on, registrations of ps {@code index} from attempts before {@code attempt}. */
  void retireAttemptsBefore(int index, int attempt) {
    firstAttempt.merge(index, attempt, Math::max);
  }

  int firstAttempt(int index) {
    return firstAttempt.getOrDefault(index, 0);
  }
}
