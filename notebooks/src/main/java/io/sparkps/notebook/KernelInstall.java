package io.sparkps.notebook;

import io.sparkps.ml.network.BlasKernels;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * Installs the Java (SparkPS) kernelspec: a folder {@code kernels/NAME} with a {@code kernel.json}
 * that starts {@link KernelMain} in a JVM with Spark's {@code --add-opens} list, a class path of
 * SparkPS and Spark's jars, OpenMP threads per task and a WARN-level log configuration.
 */
@Command(name = "install", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Installs the Java (SparkPS) Jupyter kernel.")
public final class KernelInstall implements Callable<Integer> {
  @Option(names = "--user", description = "Install for this user (the default): ~/.local/share/jupyter/kernels.")
  boolean user;

  @Option(names = "--prefix", paramLabel = "DIR", description = "Install into DIR/share/jupyter/kernels "
      + "(Jupyter finds it with JUPYTER_PATH=DIR/share/jupyter, or when DIR is its environment's prefix).")
  Path prefix;

  @Option(names = "--spark-home", paramLabel = "DIR", description = "The Spark whose jars/ the kernel uses "
      + "(default: $SPARK_HOME, else the Spark the build copied to notebooks/target/spark-jars).")
  Path sparkHome;

  @Option(names = "--spark-jars", paramLabel = "DIR", hidden = true, description = "The build's copy of Spark's jars.")
  Path buildSparkJars;

  @Option(names = "--name", defaultValue = "sparkps", description = "The kernelspec's name (default: ${DEFAULT-VALUE}).")
  String name;

  @Option(names = "--display-name", defaultValue = "Java (SparkPS)", description = "Shown in Jupyter's kernel list.")
  String displayName;

  @Option(names = "--memory", defaultValue = "4g", description = "The kernel JVM's heap, Spark's local driver "
      + "memory (default: ${DEFAULT-VALUE}).")
  String memory;

  @Option(names = "--omp-threads", defaultValue = "1", description = "OMP_NUM_THREADS: cores per Spark task "
      + "(default: ${DEFAULT-VALUE}, one per local task).")
  int ompThreads;

  @Option(names = "--env", paramLabel = "KEY=VALUE", description = "An environment variable for the kernel "
      + "(repeatable), e.g. SPARK_LOCAL_IP=127.0.0.1 or HADOOP_CONF_DIR=/etc/hadoop/conf.")
  Map<String, String> env = new LinkedHashMap<>();

  @Option(names = "--java", paramLabel = "PATH", description = "The java command (default: this JVM's).")
  Path java;

  @Spec
  CommandSpec spec;

  /** {@code KernelInstall [options]}; exit 0 when installed, 2 on bad options. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new KernelInstall()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    if (user && prefix != null) {
      throw bad("--user and --prefix exclude each other: give one");
    }
    if (ompThreads < 1) {
      throw bad("--omp-threads must be >= 1, got " + ompThreads);
    }
    Path dir = install();
    System.out.println("Installed the kernel '" + displayName + "' (" + name + ") in " + dir);
    System.out.println("Start Jupyter with: jupyter notebook notebooks/   and pick '" + displayName + "'.");
    return 0;
  }

  /** Writes the kernelspec; returns its folder. */
  Path install() throws IOException {
    Path sparkJars = sparkJars();
    Path dir = kernelsDir().resolve(name);
    Files.createDirectories(dir);
    Path log4j = dir.resolve("log4j2.properties");
    try (InputStream in = KernelInstall.class.getResourceAsStream("log4j2.properties")) {
      Files.copy(in, log4j, StandardCopyOption.REPLACE_EXISTING);
    }
    Files.writeString(dir.resolve("kernel.json"), KernelSpecJson.write(argv(sparkJars, log4j), displayName, environment()),
        StandardCharsets.UTF_8);
    return dir;
  }

  private List<String> argv(Path sparkJars, Path log4j) {
    List<String> argv = new ArrayList<>();
    argv.add((java != null ? java : Path.of(System.getProperty("java.home"), "bin", "java")).toAbsolutePath().toString());
    argv.add("-Xmx" + memory);
    argv.addAll(List.of(Notebook.addOpens().trim().split("\\s+")));
    argv.add("--add-opens=jdk.jshell/jdk.jshell=ALL-UNNAMED");
    argv.add("-Djava.awt.headless=true");
    argv.add("-Dlog4j2.configurationFile=" + log4j.toUri());
    argv.add("-cp");
    argv.add(classPath(sparkJars));
    argv.add(KernelMain.class.getName());
    argv.add("{connection_file}");
    return argv;
  }

  /** This installer's own class path (the kernel jar and its libraries), then Spark's jars. */
  private static String classPath(Path sparkJars) {
    List<String> entries = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(e -> !e.isBlank()).map(e -> Path.of(e).toAbsolutePath().toString()).collect(Collectors.toList());
    entries.add(sparkJars.toAbsolutePath() + File.separator + "*");
    return String.join(File.pathSeparator, entries);
  }

  private Map<String, String> environment() {
    Map<String, String> all = new LinkedHashMap<>();
    all.put("OMP_NUM_THREADS", Integer.toString(ompThreads));
    // ND4J's OpenBLAS reads its kernels when it loads; on a CPU newer than it knows it would take SSE3's.
    Optional.ofNullable(System.getenv(BlasKernels.ENV)).or(() -> BlasKernels.suggested(BlasKernels.cpuFlags()))
        .ifPresent(kernels -> all.put(BlasKernels.ENV, kernels));
    all.putAll(env);
    return all;
  }

  private Path kernelsDir() {
    if (prefix != null) {
      return prefix.toAbsolutePath().resolve(Path.of("share", "jupyter", "kernels"));
    }
    String data = System.getenv("JUPYTER_DATA_DIR");
    return data != null ? Path.of(data, "kernels")
        : Path.of(System.getProperty("user.home"), ".local", "share", "jupyter", "kernels");
  }

  /** Spark's jars: --spark-home, else $SPARK_HOME, else the build's copy; each checked to hold Spark. */
  Path sparkJars() {
    String envHome = System.getenv("SPARK_HOME");
    if (sparkHome != null) {
      return checked(sparkHome.resolve("jars"), "--spark-home " + sparkHome);
    } else if (envHome != null && !envHome.isBlank()) {
      return checked(Path.of(envHome, "jars"), "SPARK_HOME=" + envHome);
    } else if (buildSparkJars != null) {
      return checked(buildSparkJars, "the build's Spark (" + buildSparkJars + "; run mvn package first)");
    }
    throw bad("no Spark to run the kernel with: pass "
        + "--spark-home DIR (a Spark 3.5 distribution), set SPARK_HOME, or install through Maven "
        + "(mvn -pl notebooks exec:exec@install-kernel), which uses the Spark the build copied");
  }

  /** Bad options: picocli's usage error (exit 2) when run as a command, else IllegalArgumentException. */
  private RuntimeException bad(String message) {
    return spec != null ? new CommandLine.ParameterException(spec.commandLine(), message)
        : new IllegalArgumentException(message);
  }

  private Path checked(Path jars, String what) {
    try (Stream<Path> files = Files.isDirectory(jars) ? Files.list(jars) : Stream.empty()) {
      if (files.noneMatch(f -> f.getFileName().toString().startsWith("spark-core_"))) {
        throw bad("no Spark in " + what + ": " + jars
            + " holds no spark-core jar; point it at a Spark distribution's folder (the one with jars/)");
      }
    } catch (IOException e) {
      throw bad("cannot list " + jars + " (" + what + "): " + e);
    }
    return jars;
  }
}
