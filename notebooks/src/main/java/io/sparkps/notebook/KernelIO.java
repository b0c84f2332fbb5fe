package io.sparkps.notebook;

import java.nio.charset.StandardCharsets;
import org.dflib.jjava.jupyter.channels.ShellReplyEnvironment;
import org.dflib.jjava.jupyter.kernel.JupyterIO;

/** The kernel's streams, with the protocol library's attach and detach of a request made callable here. */
final class KernelIO extends JupyterIO {
  KernelIO() {
    super(StandardCharsets.UTF_8);
  }

  /** Cell output (stdout, stderr, displays, stdin when allowed) goes to {@code env}'s request from now on. */
  void attach(ShellReplyEnvironment env, boolean stdinAllowed) {
    setEnv(env);
    setJupyterInEnabled(stdinAllowed);
  }

  /** Output after this is dropped unless another request attaches. */
  void detach(ShellReplyEnvironment env) {
    retractEnv(env);
  }
}
