package io.sparkps.ps.client;

import io.sparkps.ps.Placement;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.ListVariablesReply;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.wire.ProtoConvert;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * What one client knows of the run's variables: their specs, where they live, and the modes of
 * their groups. Variables this client did not declare are learned from the shards on first use.
 */
final class VariableCatalog {
  private final Placement placement;
  private final Supplier<List<ListVariablesReply>> lister;
  private final Map<String, VariableSpec> specs = new ConcurrentHashMap<>();
  private final Map<String, Consistency> groupModes = new ConcurrentHashMap<>(
      Map.of(ConsistencyGroup.DEFAULT_NAME, Consistency.ASYNC));
  private final Map<String, io.sparkps.ps.grpc.proto.GroupSpec> groups = new ConcurrentHashMap<>();

  /** A catalog over {@code placement} that asks {@code lister} for what it does not know. */
  VariableCatalog(Placement placement, Supplier<List<ListVariablesReply>> lister) {
    this.placement = placement;
    this.lister = lister;
  }

  Placement placement() {
    return placement;
  }

  Map<String, VariableSpec> specs() {
    return specs;
  }

  void recordGroup(ConsistencyGroup group) {
    groupModes.put(group.name(), group.mode());
    groups.put(group.name(), ProtoConvert.toProto(group));
  }

  /** Every slice on shard {@code shard} of the variables this client knows. */
  List<Placement.Slice> slicesOn(int shard) {
    List<Placement.Slice> on = new ArrayList<>();
    for (String name : new TreeSet<>(specs.keySet())) {
      placement.slicesOf(name).stream().filter(s -> s.shard() == shard).forEach(on::add);
    }
    return on;
  }

  /** What recreates shard {@code shard}'s part of the run (on a replacement): the groups and its slices. */
  CreateRequest createRequest(int shard) {
    CreateRequest.Builder b = CreateRequest.newBuilder().addAllGroups(groups.values());
    for (Placement.Slice s : slicesOn(shard)) {
      b.addSlices(SliceDecl.newBuilder().setSpec(ProtoConvert.toProto(specs.get(s.name()))).setRowStart(s.rowStart())
          .setRowEnd(s.rowEnd()));
    }
    return b.build();
  }

  /** Whether reads of a variable may wait for other workers (its group is SYNC, SSP, or unknown here). */
  boolean mayWait(String name) {
    VariableSpec spec = specs.get(name);
    return spec == null || groupModes.getOrDefault(spec.group(), Consistency.SYNC) != Consistency.ASYNC;
  }

  /**
   * Places a batch of new variables (a name declared before with another spec is an error) and
   * returns the create request of each shard that holds a slice of them.
   */
  Map<Integer, CreateRequest> declare(Collection<VariableSpec> batch) {
    for (VariableSpec spec : batch) {
      VariableSpec known = specs.get(spec.name());
      if (known != null && !known.sameDeclaration(spec)) {
        throw new IllegalArgumentException("variable '" + spec.name() + "' was declared as " + known
            + "; now as " + spec);
      }
    }
    Map<String, List<Placement.Slice>> placed = placement.place(batch);
    batch.forEach(spec -> specs.putIfAbsent(spec.name(), spec));
    Map<Integer, CreateRequest.Builder> perShard = new LinkedHashMap<>();
    for (VariableSpec spec : batch) {
      for (Placement.Slice slice : placed.get(spec.name())) {
        perShard.computeIfAbsent(slice.shard(), s -> CreateRequest.newBuilder()).addSlices(SliceDecl.newBuilder()
            .setSpec(ProtoConvert.toProto(spec)).setRowStart(slice.rowStart()).setRowEnd(slice.rowEnd()));
      }
    }
    Map<Integer, CreateRequest> requests = new LinkedHashMap<>();
    perShard.forEach((shard, b) -> requests.put(shard, b.build()));
    return requests;
  }

  /** The spec of a variable, learning it from the shards if this client did not declare it. */
  VariableSpec resolve(String name) {
    VariableSpec spec = specs.get(name);
    if (spec == null) {
      adoptFromServers();
      spec = specs.get(name);
    }
    if (spec == null) {
      throw new IllegalArgumentException("unknown variable '" + name + "': no ps shard holds it; create it first"
          + " (known: " + new TreeSet<>(specs.keySet()) + ")");
    }
    return spec;
  }

  List<VariableSpec> resolveAll(Collection<String> names) {
    List<VariableSpec> all = new ArrayList<>(names.size());
    names.forEach(n -> all.add(resolve(n)));
    return all;
  }

  /** The names of the given variables held by each shard. */
  Map<Integer, List<String>> perShard(List<VariableSpec> vars) {
    Map<Integer, List<String>> perShard = new LinkedHashMap<>();
    for (VariableSpec v : vars) {
      for (Placement.Slice s : placement.slicesOf(v.name())) {
        perShard.computeIfAbsent(s.shard(), k -> new ArrayList<>()).add(v.name());
      }
    }
    return perShard;
  }

  private synchronized void adoptFromServers() {
    Map<String, List<Placement.Slice>> found = new LinkedHashMap<>();
    Map<String, VariableSpecProto> protos = new LinkedHashMap<>();
    for (ListVariablesReply reply : lister.get()) {
      reply.getGroupsList().forEach(g -> {
        groupModes.putIfAbsent(g.getName(), ProtoConvert.fromProto(g).mode());
        groups.putIfAbsent(g.getName(), g);
      });
      for (VariableInfoProto v : reply.getVariablesList()) {
        VariableSpec shapeOnly = VariableSpec.builder().setName(v.getSpec().getName()).setShape(shape(v.getSpec())).build();
        found.computeIfAbsent(shapeOnly.name(), k -> new ArrayList<>()).add(new Placement.Slice(shapeOnly.name(),
            v.getShard(), v.getRowStart(), v.getRowEnd(), shapeOnly.rowLength()));
        protos.putIfAbsent(shapeOnly.name(), v.getSpec());
      }
    }
    found.forEach((n, slices) -> {
      if (!specs.containsKey(n)) {
        slices.sort(Comparator.comparingLong(Placement.Slice::rowStart));
        placement.adopt(n, slices);
        VariableSpecProto p = protos.get(n);
        specs.put(n, VariableSpec.builder().setName(n).setShape(shape(p)).optGroup(p.getGroup())
            .optAllowNonFinite(p.getAllowNonFinite()).optOptimizer(ProtoConvert.fromProto(p.getOptimizer())).build());
      }
    });
  }

  private static long[] shape(VariableSpecProto p) {
    return p.getShapeList().stream().mapToLong(Long::longValue).toArray();
  }

  static void checkShape(VariableSpec spec, INDArray a, String what) {
    if (a == null) {
      throw new IllegalArgumentException(what + " for variable '" + spec.name() + "' is null");
    }
    if (!Arrays.equals(a.shape(), spec.shape())) {
      throw new IllegalArgumentException(what + " for variable '" + spec.name() + "' has shape "
          + TensorCodec.shape(a.shape()) + " but the variable's shape is " + TensorCodec.shape(spec.shape()));
    }
  }

  static void checkRows(VariableSpec spec, long[] rows) {
    for (long r : rows) {
      if (r < 0 || r >= spec.rows()) {
        throw new IllegalArgumentException("row " + r + " is outside the " + spec.rows() + " rows of '" + spec.name() + "'");
      }
    }
  }

  Set<String> names() {
    return specs.keySet();
  }
}
