package io.sparkps.notebook;

import java.nio.file.Files;
import java.nio.file.Path;
import org.dflib.jjava.jupyter.channels.JupyterConnection;
import org.dflib.jjava.jupyter.kernel.KernelConnectionProperties;

/**
 * Starts the Java (SparkPS) kernel on the connection file Jupyter passes (the kernelspec's
 * {@code {connection_file}}). Exits when Jupyter shuts the kernel down: Spark leaves non-daemon
 * threads behind, so the JVM is ended explicitly.
 */
public final class KernelMain {
  private KernelMain() {}

  /** {@code KernelMain CONNECTION_FILE}. */
  public static void main(String[] args) throws Exception {
    if (args.length != 1 || !Files.isRegularFile(Path.of(args[0]))) {
      System.err.println("usage: KernelMain CONNECTION_FILE (Jupyter starts the kernel with it; got "
          + String.join(" ", args) + "). To install the kernel: io.sparkps.notebook.KernelInstall --help");
      System.exit(2);
    }
    KernelConnectionProperties connection = KernelConnectionProperties.parse(Files.readString(Path.of(args[0])));
    JupyterConnection channels = new JupyterConnection(connection);
    // made before any cell runs: logging binds to the kernel's own stderr, not a cell's output
    SparkPsKernel kernel = new SparkPsKernel(System.getProperty("java.class.path"));
    kernel.becomeHandlerForConnection(channels);
    channels.connect();
    kernel.onStartup();
    channels.waitUntilClose();
    System.exit(0);
  }
}
