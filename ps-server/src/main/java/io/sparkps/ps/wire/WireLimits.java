package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.VariableSpecProto;

/**
 * The sizes a shard accepts from the wire, checked before anything is allocated or written, with
 * arithmetic that cannot overflow. A refusal names the field at fault (INVALID_ARGUMENT) and
 * leaves the shard unchanged.
 *
 * @param maxVariableElements the most elements one variable may have (all its shards together)
 */
@Internal
public record WireLimits(long maxVariableElements) {
  /** Default: 2^30 elements (4 GiB of float32) per variable; raise it for larger embedding tables. */
  public static final long DEFAULT_MAX_VARIABLE_ELEMENTS = 1L << 30;
  /** A slice is one Java array. */
  public static final long MAX_SLICE_ELEMENTS = Integer.MAX_VALUE - 8;
  /** Workers of one consistency group, at the most. */
  public static final int MAX_GROUP_WORKERS = 1 << 16;
  /** The largest SSP staleness. */
  public static final int MAX_STALENESS = 1 << 20;
  /** Longest variable or group name. */
  public static final int MAX_NAME = 1024;

  /** The defaults. */
  public static WireLimits defaults() {
    return new WireLimits(DEFAULT_MAX_VARIABLE_ELEMENTS);
  }

  public WireLimits {
    if (maxVariableElements < 1) {
      throw new IllegalArgumentException("maxVariableElements must be >= 1, got " + maxVariableElements);
    }
  }

  public void check(GroupSpec g) {
    String where = "group '" + g.getName() + "'";
    name(g.getName(), "group name");
    int min = g.getMode() == ConsistencyMode.ASYNC ? 0 : 1;
    if (g.getNumWorkers() < min || g.getNumWorkers() > MAX_GROUP_WORKERS) {
      throw PsError.invalid(where + ": num_workers " + g.getNumWorkers() + " is not in " + min + ".." + MAX_GROUP_WORKERS);
    }
    if (g.getStaleness() < 0 || g.getStaleness() > MAX_STALENESS) {
      throw PsError.invalid(where + ": staleness " + g.getStaleness() + " is not in 0.." + MAX_STALENESS);
    }
    if (g.getStalenessAwareRate() && g.getMode() == ConsistencyMode.SYNC) {
      throw PsError.invalid(where + ": staleness_aware_rate is for ASYNC and SSP groups; SYNC gradients are never "
          + "stale");
    }
  }

  /** The elements of the slice {@code decl} declares, once its shape and rows check out. */
  public long check(SliceDecl decl, int shard) {
    VariableSpecProto spec = decl.getSpec();
    name(spec.getName(), "variable name");
    String where = "variable '" + spec.getName() + "'";
    long elements = 1;
    for (int i = 0; i < spec.getShapeCount(); i++) {
      long d = spec.getShape(i);
      if (d < 1) {
        throw PsError.invalid(where + ": shape[" + i + "] is " + d + "; every dimension must be >= 1");
      }
      if (elements > maxVariableElements / d) {
        throw PsError.invalid(where + ": shape " + spec.getShapeList() + " has more than " + maxVariableElements
            + " elements, this ps's maxVariableElements (raise it, e.g. spark.sparkps.ps.maxVariableElements)");
      }
      elements *= d;
    }
    long rows = spec.getShapeCount() == 0 ? 1 : spec.getShape(0);
    if (decl.getRowStart() < 0 || decl.getRowStart() >= decl.getRowEnd() || decl.getRowEnd() > rows) {
      throw PsError.invalid(where + ": row_start " + decl.getRowStart() + " and row_end " + decl.getRowEnd()
          + " are not a range within its " + rows + " rows");
    }
    long slice = (decl.getRowEnd() - decl.getRowStart()) * (elements / rows); // <= elements: no overflow
    if (slice > MAX_SLICE_ELEMENTS) {
      throw PsError.invalid(where + ": its rows [" + decl.getRowStart() + ", " + decl.getRowEnd() + ") on ps " + shard
          + " hold " + slice + " elements, more than one shard holds of a variable (" + MAX_SLICE_ELEMENTS
          + "): use more ps shards");
    }
    return slice;
  }

  /** Refuses a pull item asking for more elements than a variable may have (repeated rows). */
  public void checkRows(String variable, int rows, int rowLength) {
    if ((long) rows * rowLength > maxVariableElements) {
      throw PsError.invalid("variable '" + variable + "': a pull of " + rows + " rows of " + rowLength
          + " values asks for more than " + maxVariableElements + " elements (field rows): pull fewer rows at once");
    }
  }

  private static void name(String name, String field) {
    if (name.isEmpty() || name.length() > MAX_NAME) {
      throw PsError.invalid(field + " of " + name.length() + " characters is not within 1.." + MAX_NAME);
    }
  }
}
