package io.sparkps.notebook;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.UnresolvedReferenceException;

/**
 * Turns what a snippet threw into what Jupyter shows: the exception's class and message, the
 * cell line it came from, and its stack with JShell's wrapper frames shown as cell lines and the
 * kernel's own frames below the cell left out.
 */
final class CellErrors {
  private static final String WRAPPER_PREFIX = "REPL.$JShell$";

  private CellErrors() {}

  /**
   * The error of a snippet that threw. {@code reported} is JShell's copy (its frames carry
   * snippet ids and lines); {@code thrown} the exception itself when this JVM ran the snippet.
   */
  static CellException runtime(JShellException reported, Throwable thrown, Map<String, CellSource> sources,
      int cellNumber, JShell shell) {
    if (reported instanceof UnresolvedReferenceException u) {
      String missing = shell.unresolvedDependencies(u.getSnippet()).collect(Collectors.joining(", "));
      String message = missing.isEmpty() ? "a declaration used here cannot run: it refers to something not defined"
          : "a declaration used here refers to " + missing + ", which is not defined yet: define it, then run again";
      return new CellException("UnresolvedReference", message, List.of(message), null);
    }
    EvalException eval = (EvalException) reported;
    String name = thrown != null ? thrown.getClass().getName() : eval.getExceptionClassName();
    String message = thrown != null ? thrown.getMessage() : eval.getMessage();
    List<String> lines = new ArrayList<>();
    lines.add(name + (message == null ? "" : ": " + message));
    Frames frames = new Frames(sources, cellNumber);
    String origin = frames.firstCellLine(eval);
    if (origin != null) {
      lines.add("  at " + origin);
    }
    frames.appendStack(lines, thrown != null ? thrown : eval, eval, "");
    return new CellException(name, message == null ? "" : message, lines, thrown);
  }

  /** Names stack frames of cells by their cell and line. */
  private record Frames(Map<String, CellSource> sources, int currentCell) {
    /** "line N: text" of the innermost cell frame, or null when no cell frame is on the stack. */
    String firstCellLine(EvalException eval) {
      for (StackTraceElement e : eval.getStackTrace()) {
        String at = cellFrame(e);
        if (at != null) {
          return at;
        }
      }
      return null;
    }

    /** A frame of JShell's translated stack as "line N: text" (this cell) or "line N of cell [k]: text". */
    String cellFrame(StackTraceElement translated) {
      String file = translated.getFileName();
      if (file == null || !file.startsWith("#")) {
        return null;
      }
      CellSource source = sources.get(file.substring(1));
      if (source == null) {
        return "line " + translated.getLineNumber() + " of snippet " + file;
      }
      int line = source.cellLine(translated.getLineNumber());
      String where = source.cellNumber() == currentCell ? "line " + line
          : "line " + line + " of cell [" + source.cellNumber() + "]";
      return where + method(translated.getMethodName()) + ": " + source.lineText(line).strip();
    }

    /** " (in f)" for a method the user declared, " (in a lambda)", or "" for the cell's own code. */
    private static String method(String name) {
      if (name.isEmpty() || name.startsWith("do_it")) {
        return "";
      }
      return name.startsWith("lambda$") ? " (in a lambda)" : " (in " + name + ")";
    }

    /**
     * Appends {@code t}'s stack and causes, down to its last cell frame. {@code translated} is
     * JShell's copy of the same chain, its frames aligned from the top with wrapper frames named
     * by snippet, or null past its end.
     */
    void appendStack(List<String> lines, Throwable t, Throwable translated, String prefix) {
      if (!prefix.isEmpty()) {
        lines.add(prefix + t);
      }
      StackTraceElement[] frames = t.getStackTrace();
      StackTraceElement[] named = translated == null ? new StackTraceElement[0] : translated.getStackTrace();
      int end = frames.length;
      for (int i = frames.length - 1; i >= 0 && !frames[i].getClassName().startsWith(WRAPPER_PREFIX); i--) {
        end = i;
      }
      end = end == 0 ? frames.length : end;
      for (int i = 0; i < end; i++) {
        String cell = i < named.length && frames[i].getClassName().startsWith(WRAPPER_PREFIX) ? cellFrame(named[i]) : null;
        lines.add("\tat " + (cell != null ? cell : frames[i].toString()));
      }
      if (end < frames.length) {
        lines.add("\t... " + (frames.length - end) + " frames of the kernel");
      }
      if (t.getCause() != null && t.getCause() != t) {
        appendStack(lines, t.getCause(), translated == null ? null : translated.getCause(), "Caused by: ");
      }
    }
  }
}
