package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CellRunnerTest {
  private CellRunner cells;

  @BeforeEach
  void start() {
    PrintStream sink = new PrintStream(new ByteArrayOutputStream());
    cells = new CellRunner(System.getProperty("java.class.path"), List.of("import java.util.*;"), sink, sink);
  }

  @AfterEach
  void stop() {
    cells.close();
  }

  @Test
  void run_lastExpression_isItsValueAsAnObject() throws Exception {
    Object v = cells.run("int x = 20;\nList<Integer> xs = List.of(x, 22);\nxs");
    assertEquals(List.of(20, 22), v);
    assertEquals(42, cells.run("x + 22"));
  }

  @Test
  void run_declarationsAndVoidCalls_haveNoValue() throws Exception {
    assertSame(CellRunner.NO_VALUE, cells.run("int y = 5;"));
    assertSame(CellRunner.NO_VALUE, cells.run("System.out.println(y);"));
    assertSame(CellRunner.NO_VALUE, cells.run("int twice(int a) { return 2 * a; }"));
    assertEquals(10, cells.run("twice(y)"));
  }

  @Test
  void run_compileError_namesTheCellLineAndJavacsMessage() throws Exception {
    CellException e = assertThrows(CellException.class, () -> cells.run("int a = 1;\n\nString s = 5;"));
    assertEquals("CompilationError", e.errorName());
    assertTrue(e.getMessage().startsWith("line 3: incompatible types: int cannot be converted to"), e.getMessage());
    assertTrue(e.traceback().contains("    String s = 5;"), e.traceback().toString());
    assertEquals(1, cells.run("a"), "the snippet before the failing one ran");
  }

  @Test
  void run_exception_showsItsClassMessageAndTheCellLinesItPassed() throws Exception {
    cells.run("int f(int a) {\n  int b = a;\n  return 10 / b;\n}");
    CellException e = assertThrows(CellException.class, () -> cells.run("int z = 1;\nz = f(0);\nz = 7;"));
    assertEquals("java.lang.ArithmeticException", e.errorName());
    assertEquals("/ by zero", e.getMessage());
    assertInstanceOf(ArithmeticException.class, e.getCause());
    List<String> tb = e.traceback();
    assertEquals("java.lang.ArithmeticException: / by zero", tb.get(0));
    assertEquals("  at line 3 of cell [1] (in f): return 10 / b;", tb.get(1));
    assertTrue(tb.contains("\tat line 2: z = f(0);"), tb.toString());
    assertEquals(1, cells.run("z"), "snippets after the failing one did not run");
  }

  @Test
  void run_causes_areShownWithTheirStacks() throws Exception {
    CellException e = assertThrows(CellException.class,
        () -> cells.run("throw new IllegalStateException(\"outer\", new java.io.IOException(\"disk full\"));"));
    assertEquals("java.lang.IllegalStateException", e.errorName());
    assertTrue(e.traceback().contains("Caused by: java.io.IOException: disk full"), e.traceback().toString());
  }

  @Test
  void run_unfinishedStatement_isACompilationErrorNamingItsLine() {
    CellException e = assertThrows(CellException.class, () -> cells.run("int a = 1;\nfor (int i = 0; i < 3; i++) {\n  a++;"));
    assertEquals("CompilationError", e.errorName());
    assertTrue(e.getMessage().startsWith("line 2: the cell ends before this statement does"), e.getMessage());
  }

  @Test
  void interrupt_endsTheRunningCellsWait() throws Exception {
    CompletableFuture<Object> cell = runAsync(cells, "Thread.sleep(60_000);\n\"slept\"");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!cells.isRunning() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertTrue(cells.isRunning(), "the cell started");
    cells.interrupt();
    Object outcome = cell.get(10, TimeUnit.SECONDS);
    CellException e = assertInstanceOf(CellException.class, outcome);
    assertEquals("java.lang.InterruptedException", e.errorName());
    assertEquals(3, cells.run("1 + 2"), "the session goes on after an interrupt");
  }

  /** Runs a cell on another thread: its value, or the CellException it ended with. */
  static CompletableFuture<Object> runAsync(CellRunner cells, String cell) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return cells.run(cell);
      } catch (CellException e) {
        return e;
      }
    });
  }
}
