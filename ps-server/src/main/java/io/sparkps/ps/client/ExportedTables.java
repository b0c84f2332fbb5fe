package io.sparkps.ps.client;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.server.ExportedRows;
import io.sparkps.ps.server.Snapshots;
import io.sparkps.ps.annotation.Internal;
import java.io.IOException;
import java.util.Map;

/**
 * The embedding tables a {@link PsClient#export} wrote, read without a parameter server and
 * without holding them: one ps's file at a time, row by row. A table larger than any one JVM is read
 * this way by as many tasks as there were ps (Spark's join of a model's tables with the rows it
 * scores).
 */
@Internal
public final class ExportedTables {
  private ExportedTables() {}

  /** One ps's file read row by row: the default rows (id {@link Long#MIN_VALUE}) too. */
  public static final class Rows implements AutoCloseable {
    private final ExportedRows.Cursor cursor;

    private Rows(ExportedRows.Cursor cursor) {
      this.cursor = cursor;
    }

    /**
     * Moves to the next row; false at the file's end. The file's SHA-256 is checked there: on a
     * damaged file the last call fails, naming it.
     */
    public boolean next() throws IOException {
      return cursor.next();
    }

    /** The current row's table. */
    public String table() {
      return cursor.table();
    }

    /** The current row's id ({@link Long#MIN_VALUE}: the table's default row on this ps). */
    public long id() {
      return cursor.id();
    }

    /** The current row's values, as many as its table's dim; the array is reused from row to row. */
    public float[] values() {
      return cursor.values();
    }

    @Override
    public void close() throws IOException {
      cursor.close();
    }
  }

  /**
   * The file that holds ps {@code shard}'s tables below {@code dir}: its save's ({@code
   * ps-NNNNN.snapshot}, with its few dense values), or, in an export of the format before, its
   * tables' own ({@code ps-NNNNN.tables}). A file system's {@code exists} says whether it was written.
   */
  public static org.apache.hadoop.fs.Path file(org.apache.hadoop.fs.FileSystem fs, String dir, int shard)
      throws IOException {
    return Snapshots.tablesFile(fs, dir, shard);
  }

  /** Opens the file ps {@code shard} wrote below {@code dir}. */
  public static Rows open(String dir, int shard) throws IOException {
    return new Rows(ExportedRows.open(dir, shard));
  }

  /**
   * The default row (what an id ps {@code shard} does not hold reads) of each table ps
   * {@code shard} wrote below {@code dir}, by table name; it seeks past the other rows.
   */
  public static Map<String, float[]> defaultRows(String dir, int shard) throws IOException {
    return ExportedRows.defaults(dir, shard);
  }
}
