package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The kernel, installed as a user installs it, passes Jupyter's own protocol checks
 * ({@code jupyter_kernel_test}: kernel_info, stdout/stderr, errors, execute results, display data,
 * completion, {@code is_complete}, inspection) and this kernel's extras (cell lines in errors,
 * interrupts, streaming, Dataset tables), driven by {@code src/test/python/test_kernel.py}.
 */
class KernelProtocolIT {
  @Test
  void installedKernel_passesJupyterKernelTest() throws Exception {
    Path spec = Jupyter.installKernel();
    String json = Files.readString(spec.resolve("kernel.json"));
    assertTrue(json.contains("\"display_name\": \"Java (SparkPS)\""), json);
    assertTrue(json.contains("\"interrupt_mode\": \"message\""), json);
    assertTrue(json.contains("\"OMP_NUM_THREADS\": \"1\""), json);
    assertTrue(json.contains("--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"), json);
    assertTrue(json.contains("--add-opens=jdk.jshell/jdk.jshell=ALL-UNNAMED"), json);
    assertTrue(Files.exists(spec.resolve("log4j2.properties")));

    Map<String, String> env = new HashMap<>(Jupyter.env());
    Jupyter.Run run = Jupyter.run(List.of(Jupyter.PYTHON.toString(), "src/test/python/test_kernel.py"), env, 600);
    assertEquals(0, run.exitCode(), "jupyter_kernel_test failed:\n" + run.output());
    Matcher ran = Pattern.compile("Ran (\\d+) tests").matcher(run.output());
    assertTrue(ran.find(), run.output());
    assertEquals(18, Integer.parseInt(ran.group(1)), "every check ran:\n" + run.output());
    assertTrue(run.output().contains("OK (skipped=5)"), "only history, pager and clear_output are skipped (the "
        + "kernel keeps no history and has no pager):\n" + run.output());
  }
}
