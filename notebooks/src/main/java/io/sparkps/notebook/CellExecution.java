package io.sparkps.notebook;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import jdk.jshell.execution.DirectExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;

/**
 * Runs JShell snippets in this JVM, on the thread that evaluates the cell, so that cells share
 * the kernel's Spark session and a value can be handed to the renderer as an object, not a string.
 * It remembers the last value and the last exception of a snippet, and which thread runs one, so
 * that an interrupt can reach it.
 */
final class CellExecution extends DirectExecutionControl {
  private volatile Thread running;
  /** A cell is being evaluated (compiling or running one of its snippets). */
  private volatile boolean inCell;
  /** An interrupt arrived while the cell was between snippets: the next one fails at once. */
  private final AtomicBoolean interruptPending = new AtomicBoolean();
  private Object lastValue;
  private Throwable lastThrown;

  /** A provider that hands JShell this instance. */
  ExecutionControlProvider provider() {
    CellExecution self = this;
    return new ExecutionControlProvider() {
      @Override
      public String name() {
        return "sparkps-cell";
      }

      @Override
      public ExecutionControl generate(ExecutionEnv env, Map<String, String> parameters) {
        return self;
      }
    };
  }

  @Override
  protected String invoke(Method doitMethod) throws Exception {
    Thread thread = Thread.currentThread();
    // Spark's local executors load cell classes (lambdas, functions) through the context loader.
    thread.setContextClassLoader(doitMethod.getDeclaringClass().getClassLoader());
    lastValue = null;
    lastThrown = null;
    running = thread;
    try {
      if (interruptPending.getAndSet(false)) {
        throw new InvocationTargetException(new InterruptedException("the cell was interrupted"));
      }
      Object value = doitMethod.invoke(null);
      lastValue = value;
      return valueString(value);
    } catch (InvocationTargetException e) {
      lastThrown = e.getCause();
      throw e;
    } finally {
      running = null;
      Thread.interrupted(); // an interrupt that arrived as the snippet ended must not hit the next one
    }
  }

  /** The value the last snippet returned (null for statements and declarations without one). */
  Object takeValue() {
    Object v = lastValue;
    lastValue = null;
    return v;
  }

  /** The exception the last snippet threw, as thrown (JShell's copy loses its type and fields). */
  Throwable takeThrown() {
    Throwable t = lastThrown;
    lastThrown = null;
    return t;
  }

  /** Whether a snippet is running now. */
  boolean isRunning() {
    return running != null;
  }

  /** Marks the start and end of a cell; an interrupt between its snippets must still stop it. */
  void cellRunning(boolean running) {
    inCell = running;
    interruptPending.set(false);
  }

  /**
   * Interrupts the thread running the current snippet; between two snippets of a cell (JShell
   * compiles each before it runs), the next snippet fails with InterruptedException instead.
   */
  @Override
  public void stop() {
    Thread t = running;
    if (t != null) {
      t.interrupt();
    } else if (inCell) {
      interruptPending.set(true);
      t = running; // the snippet may have started meanwhile: it would miss the flag
      if (t != null) {
        t.interrupt();
      }
    }
  }

  @Override
  public void close() {
    // the kernel owns this JVM; nothing to release
  }
}
