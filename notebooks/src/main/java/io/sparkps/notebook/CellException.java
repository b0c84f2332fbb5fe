package io.sparkps.notebook;

import java.util.List;

/**
 * A cell failed: javac rejected it, or it threw. Carries what Jupyter shows of an error: the
 * error's name (the exception's class, or {@code CompilationError}), its message, and the
 * traceback lines with cell line numbers in place of JShell's wrapper classes.
 */
public final class CellException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String errorName;
  private final List<String> traceback;

  CellException(String errorName, String message, List<String> traceback, Throwable cause) {
    super(message, cause);
    this.errorName = errorName;
    this.traceback = List.copyOf(traceback);
  }

  /** The error's name: the thrown exception's class name, or {@code CompilationError}. */
  public String errorName() {
    return errorName;
  }

  /** The lines Jupyter shows under the error, first line first. */
  public List<String> traceback() {
    return traceback;
  }

  /** The message, traceback included, as one text. */
  @Override
  public String toString() {
    return errorName + ": " + getMessage() + "\n" + String.join("\n", traceback);
  }
}
