package io.sparkps.notebook;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jshell.Diag;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.SourceCodeAnalysis.Completeness;
import jdk.jshell.VarSnippet;

/**
 * Evaluates Java cells with the JDK's JShell, in this JVM: a cell is split into snippets,
 * evaluated in order until one fails; the value of a final expression is returned as an object.
 * Not thread-safe: one cell at a time (the kernel's shell thread); {@link #interrupt()} may be
 * called from any thread.
 */
final class CellRunner implements AutoCloseable {
  /** What a cell returns when it ends with no expression to show. */
  static final Object NO_VALUE = new Object();

  private final CellExecution execution = new CellExecution();
  private final JShell shell;
  /** Every snippet evaluated, by JShell's id, for cell lines in tracebacks of later cells too. */
  private final Map<String, CellSource> sources = new HashMap<>();
  private int cellNumber;

  /**
   * A JShell whose compiler sees {@code classPath} (the classes of this JVM) and that has run
   * {@code startup} (imports) already; snippet output goes to {@code out}/{@code err}.
   */
  CellRunner(String classPath, List<String> startup, PrintStream out, PrintStream err) {
    this.shell = JShell.builder()
        .executionEngine(execution.provider(), null)
        .compilerOptions("-classpath", classPath)
        .out(out).err(err)
        .build();
    for (String snippet : startup) {
      try {
        run(snippet);
      } catch (CellException e) {
        throw new IllegalStateException("the kernel's startup snippet failed: " + snippet + "\n" + e, e);
      }
    }
    cellNumber = 0; // the user's first cell is cell 1
  }

  /**
   * Runs a cell; returns the value of its last snippet when that is an expression, else
   * {@link #NO_VALUE}. Throws when a snippet does not compile or throws; snippets before it keep
   * their effect, those after it do not run.
   */
  Object run(String cell) throws CellException {
    cellNumber++;
    Interrupts.beforeCell(cellNumber, cell.strip().lines().findFirst().orElse(""));
    execution.cellRunning(true);
    try {
      Object value = NO_VALUE;
      for (CellSource snippet : split(cell)) {
        value = evaluate(snippet);
      }
      return value;
    } finally {
      execution.cellRunning(false);
    }
  }

  /** Interrupts the running cell's thread (a blocking wait in it then throws InterruptedException). */
  void interrupt() {
    execution.stop();
  }

  /** Whether a cell is running now. */
  boolean isRunning() {
    return execution.isRunning();
  }

  /** The source analysis, for completion, documentation and {@code is_complete}. */
  SourceCodeAnalysis analysis() {
    return shell.sourceCodeAnalysis();
  }

  /** The cell's snippets, each with the cell line it starts on. */
  List<CellSource> split(String cell) throws CellException {
    List<CellSource> snippets = new ArrayList<>();
    String remaining = cell;
    while (!remaining.isBlank()) {
      int start = cell.length() - remaining.length() + leadingBlank(remaining);
      SourceCodeAnalysis.CompletionInfo info = analysis().analyzeCompletion(remaining);
      if (info.completeness() == Completeness.EMPTY) {
        break;
      }
      // evaluated without the blank lines before it, so that its line 1 is the cell line it starts on
      String source = (info.source() == null ? remaining : info.source()).stripLeading();
      CellSource snippet = new CellSource(source, lineOf(cell, start), cell, cellNumber);
      if (!info.completeness().isComplete()) {
        throw new CellException("CompilationError", "line " + lineOf(cell, start) + ": the cell ends before this "
            + "statement does (a missing ';', '}' or ')'?)", List.of(snippet.lineText(lineOf(cell, start))), null);
      }
      snippets.add(snippet);
      remaining = info.remaining();
    }
    return snippets;
  }

  private Object evaluate(CellSource snippet) throws CellException {
    Object value = NO_VALUE;
    for (SnippetEvent event : shell.eval(snippet.source())) {
      if (event.causeSnippet() != null) {
        continue; // a dependent snippet's status changed; not this cell's result
      }
      sources.put(event.snippet().id(), snippet);
      if (event.status() == Snippet.Status.REJECTED) {
        throw compileError(event.snippet(), snippet);
      }
      if (event.exception() != null) {
        throw CellErrors.runtime(event.exception(), execution.takeThrown(), sources, cellNumber, shell);
      }
      value = hasValue(event.snippet()) ? execution.takeValue() : NO_VALUE;
    }
    return value;
  }

  private static boolean hasValue(Snippet s) {
    return s.kind() == Snippet.Kind.EXPRESSION
        || s.kind() == Snippet.Kind.VAR && s.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND
            && !"void".equals(((VarSnippet) s).typeName());
  }

  private CellException compileError(Snippet rejected, CellSource snippet) {
    List<String> lines = new ArrayList<>();
    String first = null;
    for (Diag d : shell.diagnostics(rejected).toList()) {
      if (!d.isError()) {
        continue;
      }
      int line = snippet.cellLineAt(d.getStartPosition());
      // javac names JShell's wrapper class, which means nothing to the user
      String message = "line " + line + ": " + d.getMessage(Locale.ROOT).replaceAll("\\n\\s*location: class\\s*$", "");
      first = first == null ? message : first;
      if (!lines.contains(message)) { // javac reports a name once for every use
        lines.add(message);
        lines.add("    " + snippet.lineText(line).strip());
      }
    }
    if (first == null) {
      first = "line " + snippet.firstLine() + ": JShell rejected this snippet";
    }
    return new CellException("CompilationError", first, lines, null);
  }

  private static int leadingBlank(String s) {
    int i = 0;
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return i;
  }

  private static int lineOf(String cell, int position) {
    int line = 1;
    for (int i = 0; i < position; i++) {
      if (cell.charAt(i) == '\n') {
        line++;
      }
    }
    return line;
  }

  @Override
  public void close() {
    shell.close();
  }
}
