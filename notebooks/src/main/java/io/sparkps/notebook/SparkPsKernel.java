package io.sparkps.notebook;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.SourceCodeAnalysis.Completeness;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.dflib.jjava.jupyter.kernel.HelpLink;
import org.dflib.jjava.jupyter.kernel.LanguageInfo;
import org.dflib.jjava.jupyter.kernel.ReplacementOptions;
import org.dflib.jjava.jupyter.kernel.comm.CommManager;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.util.StringStyler;
import org.dflib.jjava.jupyter.kernel.util.TextColor;
import org.dflib.jjava.jupyter.messages.Header;
import org.dflib.jjava.jupyter.messages.Message;
import org.dflib.jjava.jupyter.messages.publish.PublishError;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteInput;
import org.dflib.jjava.jupyter.messages.publish.PublishExecuteResult;
import org.dflib.jjava.jupyter.messages.reply.ErrorReply;
import org.dflib.jjava.jupyter.messages.reply.ExecuteReply;
import org.dflib.jjava.jupyter.messages.reply.KernelInfoReply;
import org.dflib.jjava.jupyter.messages.request.ExecuteRequest;
import org.dflib.jjava.jupyter.messages.request.KernelInfoRequest;

/**
 * The Java (SparkPS) Jupyter kernel: cells are Java, evaluated by JShell in this JVM, where
 * Spark and SparkPS are on the class path. The last expression's value is displayed (a
 * {@code Dataset} as a table, an image or chart inline, a job as its progress); an interrupt
 * cancels the running SparkPS runs and Spark jobs and interrupts the cell instead of killing the
 * kernel. The shell channel's thread runs cells, one at a time; the control channel's thread
 * delivers interrupts.
 */
public final class SparkPsKernel extends BaseKernel {
  /** What every session imports before the first cell. */
  static final List<String> STARTUP = List.of(
      "import java.util.*;",
      "import java.util.stream.*;",
      "import java.time.Duration;",
      "import java.nio.file.*;",
      "import org.apache.spark.sql.*;",
      "import org.apache.spark.api.java.*;",
      "import io.sparkps.notebook.Notebook;",
      "import static io.sparkps.notebook.Notebook.*;");

  private final CellRunner cells;

  /** A kernel whose cells see {@code classPath}; the JVM's class path when run by a kernelspec. */
  public SparkPsKernel(String classPath) {
    super("SparkPS", Notebook.version(), new LanguageInfo.Builder("java").version(Runtime.version().toString())
            .mimetype("text/x-java-source").fileExtension(".jshell").pygments("java").codemirror("text/x-java").build(),
        Collections.emptyList(), null, new KernelIO(), new CommManager(),
        new Renderer(), null, null, false, new StringStyler.Builder().addPrimaryStyle(TextColor.BOLD_RESET_FG)
            .addSecondaryStyle(TextColor.RED_FG).addHighlightStyle(TextColor.BOLD_RESET_FG).build());
    Notebook.attach(io.display);
    this.cells = new CellRunner(classPath, STARTUP, io.out, io.err);
  }

  @Override
  public Object evalRaw(String source) {
    try {
      Object value = cells.run(source);
      return value == CellRunner.NO_VALUE ? null : value;
    } catch (CellException e) {
      throw new CellFailed(e);
    } finally {
      io.out.flush();
      io.err.flush();
    }
  }

  @Override
  public DisplayData eval(String expr) {
    Object value = evalRaw(expr);
    return value == null ? null : Displays.render(value);
  }

  /**
   * As the base class runs a request, but a failed cell's error (on the output channel and in the
   * reply alike) is named by the cell's own exception and shows cell lines instead of the kernel's
   * frames.
   */
  @Override
  protected synchronized void handleExecuteRequest(ShellReplyEnvironment env, Message<ExecuteRequest> message) {
    commManager.setMessageContext(message);
    ExecuteRequest request = message.getContent();
    int count = executionCount.getAndIncrement();
    env.setBusyDeferIdle();
    env.publish(new PublishExecuteInput(request.getCode(), count));
    replaceOutputStreams(env);
    ((KernelIO) io).attach(env, request.isStdinEnabled());
    env.defer(() -> ((KernelIO) io).detach(env));
    try {
      DisplayData out = eval(request.getCode());
      if (out != null) {
        env.publish(new PublishExecuteResult(count, out));
      }
      env.defer().reply(new ExecuteReply(count, Collections.emptyMap()));
    } catch (RuntimeException e) {
      PublishError error = e instanceof CellFailed f ? f.error() : PublishError.of(e, this::formatError);
      ErrorReply reply = new ErrorReply(error.getErrorName(), error.getErrorMessage(), error.getStacktrace());
      reply.setExecutionCount(count);
      env.publish(error);
      env.defer().replyError(ExecuteReply.MESSAGE_TYPE.error(), reply);
    }
  }

  /** The base class's reply, with the {@code status} field that protocol 5 requires of every reply. */
  @Override
  protected void handleKernelInfoRequest(ShellReplyEnvironment env, Message<KernelInfoRequest> request) {
    env.setBusyDeferIdle();
    env.reply(new KernelInfo(getLanguageInfo(), getBanner(), getHelpLinks()));
  }

  @Override
  public DisplayData inspect(String code, int at, boolean extraDetail) {
    List<SourceCodeAnalysis.Documentation> docs = cells.analysis().documentation(code, at, extraDetail);
    if (docs.isEmpty()) {
      return null;
    }
    StringBuilder text = new StringBuilder();
    for (SourceCodeAnalysis.Documentation d : docs) {
      text.append(d.signature()).append('\n');
      if (d.javadoc() != null) {
        text.append(d.javadoc()).append('\n');
      }
    }
    return new DisplayData(text.toString().strip());
  }

  @Override
  public ReplacementOptions complete(String code, int at) {
    int[] anchor = new int[1];
    LinkedHashSet<String> names = new LinkedHashSet<>();
    for (SourceCodeAnalysis.Suggestion s : cells.analysis().completionSuggestions(code, at, anchor)) {
      names.add(s.continuation());
    }
    return names.isEmpty() ? null : new ReplacementOptions(List.copyOf(names), anchor[0], at);
  }

  @Override
  public String isComplete(String code) {
    String remaining = code;
    while (!remaining.isBlank()) {
      SourceCodeAnalysis.CompletionInfo info = cells.analysis().analyzeCompletion(remaining);
      Completeness c = info.completeness();
      if (c == Completeness.EMPTY) {
        break;
      }
      if (c == Completeness.DEFINITELY_INCOMPLETE || c == Completeness.CONSIDERED_INCOMPLETE) {
        return "    ";
      }
      if (c == Completeness.UNKNOWN) {
        return IS_COMPLETE_BAD;
      }
      remaining = info.remaining();
    }
    return IS_COMPLETE_YES;
  }

  /**
   * Jupyter's interrupt: cancels this JVM's SparkPS runs (they end CANCELLED, their tasks
   * stopped), then Spark's running jobs, then interrupts the cell's thread so that a wait in it
   * returns. The kernel and its Spark session stay up.
   */
  @Override
  public void interrupt() {
    Interrupts.interrupt(cells);
  }

  @Override
  public void onShutdown(boolean isRestarting) {
    Interrupts.interrupt(cells);
    Notebook.stopSpark();
    cells.close();
    super.onShutdown(isRestarting);
  }

  /** kernel_info_reply with its status. */
  static final class KernelInfo extends KernelInfoReply {
    @SuppressWarnings("unused") // read by Gson
    private final String status = "ok";

    KernelInfo(LanguageInfo language, String banner, List<HelpLink> links) {
      super(Header.PROTOCOL_VERISON, "SparkPS", Notebook.version(), language, banner, links);
    }
  }

  /** Carries a cell's error out of {@code evalRaw}, whose contract is unchecked. */
  static final class CellFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient CellException cell;

    CellFailed(CellException cell) {
      super(cell.getMessage(), cell);
      this.cell = cell;
    }

    /** The error as Jupyter shows it: the exception's simple name, its message, the traceback. */
    PublishError error() {
      String name = cell.errorName();
      return new PublishError(name.substring(name.lastIndexOf('.') + 1), cell.getMessage(), cell.traceback());
    }
  }
}
