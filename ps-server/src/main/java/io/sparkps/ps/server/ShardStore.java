package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.ListVariablesReply;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.ProtoConvert;
import io.sparkps.ps.wire.PsError;
import io.sparkps.ps.wire.WireLimits;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;


/**
 * Everything one parameter-server shard holds: variable slices and consistency groups.
 *
 * <p>Thread-safety: the maps are concurrent; each slice is guarded by its own lock, and a request
 * that touches several slices locks them in name order ({@link #lockAll}) so that it validates
 * and applies atomically. State changes end with {@link Waiters#signal()}, outside any lock.
 */
@Internal
public final class ShardStore {
  final int shardIndex;
  final Waiters waiters;
  final WireLimits limits;
  private final ConcurrentHashMap<String, VariableSlice> slices = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, GroupState> groups = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicLong elements = new java.util.concurrent.atomic.AtomicLong();

  /** An empty shard with the default ASYNC group and the default limits. */
  public ShardStore(int shardIndex, Waiters waiters) {
    this(shardIndex, waiters, WireLimits.defaults());
  }

  /** An empty shard with the default ASYNC group, refusing sizes beyond {@code limits}. */
  public ShardStore(int shardIndex, Waiters waiters, WireLimits limits) {
    this.shardIndex = shardIndex;
    this.waiters = waiters;
    this.limits = limits;
    GroupSpec defaultGroup = GroupSpec.newBuilder().setName(ConsistencyGroup.DEFAULT_NAME)
        .setMode(ConsistencyMode.ASYNC).build();
    groups.put(defaultGroup.getName(), new GroupState(defaultGroup));
  }

  /** Values held by all slices of this shard (kept as slices are added: asked on every bulk update). */
  public long elements() {
    return elements.get();
  }

  /** This shard's index. */
  public int shardIndex() {
    return shardIndex;
  }

  /** Creates groups and slices; existing identical ones are kept, conflicting ones refused. */
  public synchronized int create(CreateRequest request) {
    for (GroupSpec g : request.getGroupsList()) {
      limits.check(g);
      GroupState existing = groups.get(g.getName());
      if (existing != null && !existing.spec.equals(g)) {
        throw PsError.conflict("group '" + g.getName() + "' exists on ps " + shardIndex + " as "
            + describe(existing.spec) + "; this request asks for " + describe(g)
            + ": every task must declare the same groups");
      }
    }
    for (SliceDecl decl : request.getSlicesList()) {
      checkSlice(decl, request);
    }
    request.getGroupsList().forEach(g -> groups.putIfAbsent(g.getName(), new GroupState(g)));
    int created = 0;
    for (SliceDecl decl : request.getSlicesList()) {
      if (!slices.containsKey(decl.getSpec().getName())) {
        put(new VariableSlice(decl.getSpec(),
            ProtoConvert.fromProto(decl.getSpec().getOptimizer()), decl.getRowStart(), decl.getRowEnd()));
        created++;
      }
    }
    return created;
  }

  private void checkSlice(SliceDecl decl, CreateRequest request) {
    limits.check(decl, shardIndex);
    String name = decl.getSpec().getName();
    String group = decl.getSpec().getGroup();
    boolean groupKnown = groups.containsKey(group)
        || request.getGroupsList().stream().anyMatch(g -> g.getName().equals(group));
    if (!groupKnown) {
      throw PsError.notFound("variable '" + name + "' names consistency group '" + group
          + "', which does not exist on ps " + shardIndex + ": create the group first");
    }
    VariableSlice existing = slices.get(name);
    if (existing == null) {
      return;
    }
    if (!withoutInitializer(existing.spec).equals(withoutInitializer(decl.getSpec()))) {
      throw PsError.conflict("variable '" + name + "' already exists on ps " + shardIndex
          + " with a different spec (" + ProtoConvert.describe(existing.spec) + "); this create asks for "
          + ProtoConvert.describe(decl.getSpec()) + ": every task must declare the same variables");
    }
    if (existing.rowStart != decl.getRowStart() || existing.rowEnd != decl.getRowEnd()) {
      throw PsError.conflict("variable '" + name + "' holds rows [" + existing.rowStart + ", "
          + existing.rowEnd + ") on ps " + shardIndex + " but this client placed rows ["
          + decl.getRowStart() + ", " + decl.getRowEnd() + ") here: every task must declare the same"
          + " variables in the same batches with the same number of ps shards");
    }
  }

  /**
   * The spec without its initializer: as with TensorFlow's initializers, only the first creator's
   * is used. Tasks that build the same network may draw different random initial values (DL4J's
   * random generator is shared by a JVM's threads), and a client that learned a variable from the
   * shards (an evaluator, a reader) recreates it on a replacement without knowing how its values
   * were first made: neither is a conflict. Shape, optimizer, group, pin and finiteness must agree.
   */
  private static io.sparkps.ps.grpc.proto.VariableSpecProto withoutInitializer(
      io.sparkps.ps.grpc.proto.VariableSpecProto s) {
    return s.hasInitializer() ? s.toBuilder().clearInitializer().build() : s;
  }

  private static String describe(GroupSpec g) {
    return g.getMode() + "(workers=" + g.getNumWorkers() + ", staleness=" + g.getStaleness() + ")";
  }

  /** The slice of a variable, or an error naming it. */
  VariableSlice slice(String name) {
    VariableSlice s = slices.get(name);
    if (s == null) {
      throw PsError.notFound("unknown variable '" + name + "' on ps " + shardIndex
          + ": it was never created here (create it before use; all tasks must use the same number of ps shards)"
          + " (field name)");
    }
    return s;
  }

  /** The spec of group {@code name}, or null when this shard has none of that name. */
  public GroupSpec groupSpec(String name) {
    GroupState g = groups.get(name);
    return g == null ? null : g.spec;
  }

  GroupState group(VariableSlice slice) {
    return groups.get(slice.spec.getGroup());
  }

  /** Locks the named slices in name order and returns them, name-ordered. */
  List<VariableSlice> lockAll(Collection<String> names) {
    TreeMap<String, VariableSlice> sorted = new TreeMap<>();
    for (String n : names) {
      sorted.put(n, slice(n));
    }
    List<VariableSlice> locked = new ArrayList<>(sorted.size());
    for (VariableSlice s : sorted.values()) {
      s.lock.lock();
      locked.add(s);
    }
    return locked;
  }

  static void unlockAll(List<VariableSlice> locked) {
    for (int i = locked.size() - 1; i >= 0; i--) {
      locked.get(i).lock.unlock();
    }
  }

  /** Null when all named variables are initialized here, else which ones are not. */
  public String uninitialized(Collection<String> names) {
    List<String> missing = new ArrayList<>();
    for (String n : names) {
      VariableSlice s = slices.get(n);
      boolean ready;
      if (s == null) {
        ready = false;
      } else {
        s.lock.lock();
        try {
          ready = s.initialized;
        } finally {
          s.lock.unlock();
        }
      }
      if (!ready) {
        missing.add(s == null ? n + " (not created)" : n);
      }
    }
    return missing.isEmpty() ? null : "variables " + missing + " are not initialized on ps " + shardIndex;
  }

  /** Every slice and group of this shard. */
  public ListVariablesReply list() {
    ListVariablesReply.Builder reply = ListVariablesReply.newBuilder();
    for (VariableSlice s : new TreeMap<>(slices).values()) {
      s.lock.lock();
      try {
        reply.addVariables(VariableInfoProto.newBuilder().setSpec(s.spec).setShard(shardIndex)
            .setRowStart(s.rowStart).setRowEnd(s.rowEnd).setVersion(s.version)
            .setInitialized(s.initialized));
      } finally {
        s.lock.unlock();
      }
    }
    groups.values().forEach(g -> reply.addGroups(g.spec));
    return reply.build();
  }

  Collection<VariableSlice> slices() {
    return new TreeMap<>(slices).values();
  }

  Collection<GroupState> groups() {
    return groups.values();
  }

  void put(VariableSlice slice) {
    VariableSlice old = slices.put(slice.name, slice);
    elements.addAndGet(slice.size - (old == null ? 0 : old.size));
  }

  void putGroup(GroupState group) {
    groups.put(group.spec.getName(), group);
  }

  static String shape(VariableSlice s) {
    return Arrays.toString(s.spec.getShapeList().toArray());
  }
}
