package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.ml.network.BlasKernels;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class KernelInstallTest {
  @TempDir
  Path tmp;

  private record Outcome(int exitCode, String err) {}

  private static Outcome install(String... args) {
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(new KernelInstall()).setErr(new PrintWriter(err)).setOut(new PrintWriter(new StringWriter()));
    return new Outcome(cli.execute(args), err.toString());
  }

  private Path fakeSparkHome() throws Exception {
    Path jars = Files.createDirectories(tmp.resolve("spark/jars"));
    Files.createFile(jars.resolve("spark-core_2.12-3.5.9.jar"));
    return jars.getParent();
  }

  @Test
  void install_withPrefix_writesAKernelSpecThatStartsTheKernelAsSparkNeeds() throws Exception {
    Path home = fakeSparkHome();
    Outcome o = install("--prefix", tmp.resolve("env").toString(), "--spark-home", home.toString(), "--memory", "6g",
        "--env", "SPARK_LOCAL_IP=127.0.0.1", "--name", "sparkps-test");
    assertEquals(0, o.exitCode(), o.err());
    Path spec = tmp.resolve("env/share/jupyter/kernels/sparkps-test");
    JsonNode json = new ObjectMapper().readTree(Files.readString(spec.resolve("kernel.json")));
    assertEquals("Java (SparkPS)", json.get("display_name").asText());
    assertEquals("java", json.get("language").asText());
    assertEquals("message", json.get("interrupt_mode").asText());
    assertEquals("1", json.get("env").get("OMP_NUM_THREADS").asText());
    assertEquals("127.0.0.1", json.get("env").get("SPARK_LOCAL_IP").asText());
    String kernels = java.util.Optional.ofNullable(System.getenv("OPENBLAS_CORETYPE"))
        .or(() -> BlasKernels.suggested(BlasKernels.cpuFlags())).orElse(null);
    assertEquals(kernels, json.get("env").has("OPENBLAS_CORETYPE") ? json.get("env").get("OPENBLAS_CORETYPE").asText()
        : null, "ND4J's OpenBLAS kernels for this CPU");
    List<String> argv = new ArrayList<>();
    json.get("argv").forEach(a -> argv.add(a.asText()));
    assertTrue(argv.get(0).endsWith("/bin/java"), argv.get(0));
    assertTrue(argv.contains("-Xmx6g"), argv.toString());
    assertTrue(argv.contains("--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"), "Spark's opens: " + argv);
    assertTrue(argv.contains("--add-opens=jdk.jshell/jdk.jshell=ALL-UNNAMED"), argv.toString());
    assertTrue(argv.contains("-Dlog4j2.configurationFile=" + spec.resolve("log4j2.properties").toUri()), argv.toString());
    assertTrue(Files.readString(spec.resolve("log4j2.properties")).contains("rootLogger.level = warn"));
    String cp = argv.get(argv.indexOf("-cp") + 1);
    assertTrue(cp.endsWith(home.resolve("jars") + "/*"), "Spark's jars last on the class path: " + cp);
    assertEquals(List.of(KernelMain.class.getName(), "{connection_file}"), argv.subList(argv.size() - 2, argv.size()));
  }

  @Test
  void install_withUserAndPrefix_failsNamingBoth() throws Exception {
    Outcome o = install("--user", "--prefix", tmp.toString(), "--spark-home", fakeSparkHome().toString());
    assertEquals(2, o.exitCode());
    assertTrue(o.err().contains("--user and --prefix exclude each other"), o.err());
    assertFalse(Files.exists(tmp.resolve("share")), "nothing written");
  }

  @Test
  void install_withASparkHomeWithoutSpark_failsNamingTheFolder() {
    Outcome o = install("--prefix", tmp.resolve("env").toString(), "--spark-home", tmp.toString());
    assertEquals(2, o.exitCode());
    assertTrue(o.err().contains("no Spark in --spark-home " + tmp + ": " + tmp.resolve("jars") + " holds no spark-core jar"),
        o.err());
    assertFalse(Files.exists(tmp.resolve("env")), "nothing written");
  }

  @Test
  void install_withoutAnySpark_saysWhereToGetOne() {
    Assumptions.assumeTrue(System.getenv("SPARK_HOME") == null, "SPARK_HOME is set here");
    Outcome o = install("--prefix", tmp.resolve("env").toString());
    assertEquals(2, o.exitCode());
    assertTrue(o.err().contains("no Spark to run the kernel with: pass --spark-home DIR"), o.err());
    assertTrue(o.err().contains("set SPARK_HOME"), o.err());
  }

  @Test
  void install_withZeroOmpThreads_isRefused() throws Exception {
    Outcome o = install("--prefix", tmp.resolve("env").toString(), "--spark-home", fakeSparkHome().toString(),
        "--omp-threads", "0");
    assertEquals(2, o.exitCode());
    assertTrue(o.err().contains("--omp-threads must be >= 1, got 0"), o.err());
  }
}
