package io.sparkps.notebook;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructField;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;

/**
 * A {@code Dataset}'s first rows as an HTML table (column names with their types as the header)
 * and as aligned text. Fetching them runs one Spark job of {@code limit + 1} rows.
 */
final class DatasetTable {
  private static final int CELL_CHARS = 40;

  private DatasetTable() {}

  static DisplayData render(Dataset<?> ds, int limit) {
    StructField[] fields = ds.schema().fields();
    List<Row> rows = ds.toDF().limit(limit + 1).collectAsList();
    boolean more = rows.size() > limit;
    List<Row> shown = more ? rows.subList(0, limit) : rows;
    List<String[]> cells = new ArrayList<>();
    for (Row r : shown) {
      String[] c = new String[fields.length];
      for (int i = 0; i < fields.length; i++) {
        c[i] = cell(r.get(i));
      }
      cells.add(c);
    }
    String footer = more ? "first " + limit + " rows" : rows.size() + (rows.size() == 1 ? " row" : " rows");
    DisplayData d = new DisplayData(text(fields, cells, footer));
    d.putHTML(html(fields, cells, footer));
    return d;
  }

  private static String cell(Object v) {
    String s = String.valueOf(v);
    return s.length() > CELL_CHARS ? s.substring(0, CELL_CHARS - 3) + "..." : s;
  }

  private static String html(StructField[] fields, List<String[]> cells, String footer) {
    StringBuilder b = new StringBuilder("<table class=\"sparkps-dataset\"><thead><tr>");
    for (StructField f : fields) {
      b.append("<th>").append(Displays.escape(f.name())).append("<br><small>")
          .append(Displays.escape(f.dataType().simpleString())).append("</small></th>");
    }
    b.append("</tr></thead><tbody>");
    for (String[] row : cells) {
      b.append("<tr>");
      for (String c : row) {
        b.append("<td>").append(Displays.escape(c)).append("</td>");
      }
      b.append("</tr>");
    }
    return b.append("</tbody></table><p><small>").append(footer).append("</small></p>").toString();
  }

  private static String text(StructField[] fields, List<String[]> cells, String footer) {
    int[] width = new int[fields.length];
    for (int i = 0; i < fields.length; i++) {
      width[i] = fields[i].name().length();
      for (String[] row : cells) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < fields.length; i++) {
      b.append(i == 0 ? "" : " | ").append(pad(fields[i].name(), width[i]));
    }
    b.append('\n');
    for (String[] row : cells) {
      for (int i = 0; i < row.length; i++) {
        b.append(i == 0 ? "" : " | ").append(pad(row[i], width[i]));
      }
      b.append('\n');
    }
    StringBuilder schema = new StringBuilder();
    for (StructField f : fields) {
      schema.append(schema.length() == 0 ? "" : ", ").append(f.name()).append(": ").append(f.dataType().simpleString());
    }
    return b.append("(").append(footer).append("; ").append(schema).append(")").toString();
  }

  private static String pad(String s, int width) {
    return s + " ".repeat(Math.max(0, width - s.length()));
  }
}
