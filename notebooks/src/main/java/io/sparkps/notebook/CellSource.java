package io.sparkps.notebook;

/**
 * One snippet of a cell and where it starts, so that JShell's snippet-relative positions can be
 * reported as lines of the cell the user wrote.
 *
 * @param source the snippet as JShell evaluates it
 * @param firstLine the cell line (1-based) the snippet starts on
 * @param cell the whole cell
 * @param cellNumber which cell of the session this is, from 1 (Jupyter's {@code In [n]} as a rule)
 */
record CellSource(String source, int firstLine, String cell, int cellNumber) {
  /** The cell line of a 1-based line within the snippet. */
  int cellLine(int snippetLine) {
    return firstLine + Math.max(snippetLine, 1) - 1;
  }

  /** The cell line of a character position within the snippet. */
  int cellLineAt(long position) {
    int line = 1;
    for (int i = 0; i < Math.min(position, source.length()); i++) {
      if (source.charAt(i) == '\n') {
        line++;
      }
    }
    return cellLine(line);
  }

  /** The text of a cell line (1-based), or "" past the end. */
  String lineText(int cellLine) {
    String[] lines = cell.split("\n", -1);
    return cellLine >= 1 && cellLine <= lines.length ? lines[cellLine - 1] : "";
  }
}
