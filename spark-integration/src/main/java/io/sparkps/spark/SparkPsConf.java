package io.sparkps.spark;

import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.RuntimeConfig;

/**
 * Every {@code spark.sparkps.*} setting, declared once: its key, type, default, meaning, and the
 * parser that validates it. A bad value fails naming the key, the value and what it may be.
 * {@code docs/configuration.md} is checked against {@link #markdownTable()} by a test, and no
 * other main class may name a {@code spark.sparkps.} key.
 *
 * <p>Each setting says where it is read: from the session's runtime conf at each fit (so {@code
 * spark.conf().set(...)} between fits counts), or from the application's conf.
 */
public final class SparkPsConf {
  /** One setting: its key, type, default (as written in a conf), meaning and parser. */
  public static final class Setting<T> {
    private final String key;
    private final String type;
    private final String defaultValue;
    private final String doc;
    private final Function<String, T> parser;
    private final boolean session;

    private Setting(String key, String type, String defaultValue, String doc, Function<String, T> parser) {
      this(key, type, defaultValue, doc, parser, false);
    }

    private Setting(String key, String type, String defaultValue, String doc, Function<String, T> parser,
        boolean session) {
      this.session = session;
      this.key = key;
      this.type = type;
      this.defaultValue = defaultValue;
      this.doc = doc;
      this.parser = parser;
    }

    public String key() {
      return key;
    }

    /** What values it takes, e.g. {@code auto, true, false} or {@code size}. */
    public String type() {
      return type;
    }

    public String defaultValue() {
      return defaultValue;
    }

    public String doc() {
      return doc;
    }

    /**
     * Whether it is read from the session's runtime conf when a fit starts (so {@code
     * spark.conf().set(...)} between fits counts), rather than from the application's conf.
     */
    public boolean perSession() {
      return session;
    }

    /** This setting, read from the session's runtime conf at each fit. */
    private Setting<T> readPerSession() {
      return new Setting<>(key, type, defaultValue, doc, parser, true);
    }

    /** {@code value} parsed (the default when null); IllegalArgumentException naming the key when bad. */
    public T parse(String value) {
      return parser.apply(value == null ? defaultValue : value);
    }

    /** Its value in {@code conf} (the default when unset). */
    public T get(SparkConf conf) {
      return parse(conf.get(key, null));
    }

    /** Its value in a session's runtime conf (the default when unset). */
    public T get(RuntimeConfig conf) {
      scala.Option<String> value = conf.getOption(key);
      return parse(value.isDefined() ? value.get() : null);
    }

    @Override
    public String toString() {
      return key;
    }
  }

  private SparkPsConf() {}

  public static final Setting<String> TLS_ENABLED = choice("spark.sparkps.tls.enabled", "auto",
      "TLS between a run's roles, ps and coordinator: `auto` turns it on when the run spans JVMs "
          + "(any master but `local[...]`)", "set it to true, false or auto", "auto", "true", "false");

  public static final Setting<Long> PS_MAX_VARIABLE_ELEMENTS = new Setting<>("spark.sparkps.ps.maxVariableElements",
      "count >= 1", String.valueOf(1L << 30), "the most elements one variable may have on the parameter servers "
          + "(all its shards together); read by the ps tasks", v -> {
        long n = parseLong(v);
        if (n < 1) {
          throw bad("spark.sparkps.ps.maxVariableElements", v, "give a number of elements >= 1, such as "
              + (1L << 30));
        }
        return n;
      });

  public static final Setting<Boolean> DATA_ALWAYS_SHUFFLE = new Setting<>("spark.sparkps.data.shuffle",
      "auto, always", "auto", "`auto` reads input whose partitions balance over the workers where it lies, with no "
          + "shuffle; `always` shuffles it evenly first (e.g. when each partition holds only some classes)", v -> {
        String s = v.trim().toLowerCase(Locale.ROOT);
        if (!s.equals("auto") && !s.equals("always")) {
          throw bad("spark.sparkps.data.shuffle", v, "set it to auto (shuffle only input that cannot be balanced "
              + "over the workers) or always");
        }
        return s.equals("always");
      }).readPerSession();

  public static final Setting<Long> DATA_IN_MEMORY_MAX = new Setting<>("spark.sparkps.data.inMemoryMax", "size",
      "128m", "the most bytes of records (an embedding model's: ids, values and labels) a worker holds in memory; "
          + "beyond it its partition is streamed to a spill file in the executor's local directories (`0` spills every "
          + "partition)", v -> {
        try {
          return JavaUtils.byteStringAsBytes(v.trim());
        } catch (NumberFormatException e) {
          throw bad("spark.sparkps.data.inMemoryMax", v, "give a size such as 128m or 2g (0 spills every partition)");
        }
      }).readPerSession();

  public static final Setting<Integer> DATA_SHUFFLE_WINDOW = new Setting<>("spark.sparkps.data.shuffleWindow",
      "rows >= 1", "16384", "rows shuffled together when a worker reads its spill file (in memory, the window is "
          + "the whole partition)", v -> {
        int rows;
        try {
          rows = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
          rows = -1;
        }
        if (rows < 1) {
          throw bad("spark.sparkps.data.shuffleWindow", v, "give a number of rows >= 1, such as 16384");
        }
        return rows;
      }).readPerSession();

  public static final Setting<Boolean> TRAIN_REUSE_FORWARD_PASS = bool("spark.sparkps.train.reuseForwardPass", true,
      "workers' plain dense layers reuse their forward pass in the backward pass, and output layers their "
          + "backward pass's pre-activations for the loss (the same gradients, a third less work); `false` keeps DL4J's own", "set it to true (dense layers reuse their forward pass "
          + "when computing gradients) or false (DL4J's own backward pass)").readPerSession();

  public static final Setting<String> TRAIN_OVERLAP_TRANSFERS = choice("spark.sparkps.train.overlapTransfers", "auto",
      "`true`: a worker's transfers overlap its passes, layer by layer (each layer's parameters pulled as the "
          + "forward pass comes to it, each layer's gradient pushed as the backward pass leaves it; the same "
          + "training); `false`: the whole network moves between the passes; `auto`: overlap when a ps runs on "
          + "another host than the worker (transfers to the worker's own host are copies that take the passes' "
          + "cores, and overlapping them was slower there)", "set it to auto, true or false", "auto", "true",
      "false").readPerSession();

  public static final Setting<Boolean> CHECKPOINT_SHARED_FILE_SYSTEM = bool(
      "spark.sparkps.checkpoint.sharedFileSystem", false, "`true` when a `file:` checkpoint directory is a mount "
          + "every host of the cluster shares (otherwise refused when executors run on other hosts)",
      "set it to true or false");

  public static final Setting<Integer> METRICS_EVERY_STEPS = new Setting<>("spark.sparkps.metrics.everySteps",
      "steps >= 1", "1", "a worker's metrics (loss, times, bytes, staleness) are recorded every this many steps for "
          + "listeners, `metrics.jsonl`, the Spark UI's SparkPS tab and the run's summary", v -> {
        long n = parseLong(v);
        if (n < 1 || n > Integer.MAX_VALUE) {
          throw bad("spark.sparkps.metrics.everySteps", v, "give a number of steps >= 1 (1 records every step)");
        }
        return (int) n;
      }).readPerSession();

  public static final Setting<String> TASK_RESOURCE_PROFILES = choice("spark.sparkps.taskResourceProfiles", "auto",
      "whether each role's tasks ask for resources of their own (the `ps.cpus`, `evaluator.cpus` and `worker.cpus` "
          + "settings; ps and evaluator tasks hold no GPU or other custom resource, a worker its executor's) through "
          + "Spark's task resource profiles: `auto` where Spark can (standalone and `local-cluster` masters, YARN and "
          + "Kubernetes on Spark 3.5.1+), else every task takes `spark.task.*`; `true` refuses a run where it cannot; "
          + "`false` never", "set it to auto, true or false", "auto", "true", "false");

  public static final Setting<Integer> PS_CPUS = cpus("spark.sparkps.ps.cpus", "1",
      "cores each ps task asks for (with task resource profiles; else `spark.task.cpus`)");

  public static final Setting<Integer> EVALUATOR_CPUS = cpus("spark.sparkps.evaluator.cpus", "1",
      "cores the evaluator's task asks for (with task resource profiles; else `spark.task.cpus`)");

  public static final Setting<Integer> WORKER_CPUS = cpus("spark.sparkps.worker.cpus", "task",
      "cores each worker's task asks for (with task resource profiles); `task`: `spark.task.cpus`");

  public static final Setting<String> CLI_LOG_LEVEL = choice("spark.sparkps.cli.logLevel", "WARN",
      "the log level of the `sparkps` command's Spark and SparkPS (`INFO` adds SparkPS's account of the run)",
      "set it to one of Log4j's levels: "
          + "ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF", "ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR",
      "FATAL", "OFF");

  /** Every setting, in the order of the docs' table. */
  public static List<Setting<?>> all() {
    return List.of(TLS_ENABLED, PS_MAX_VARIABLE_ELEMENTS, DATA_ALWAYS_SHUFFLE, DATA_IN_MEMORY_MAX,
        DATA_SHUFFLE_WINDOW, TRAIN_REUSE_FORWARD_PASS, TRAIN_OVERLAP_TRANSFERS, CHECKPOINT_SHARED_FILE_SYSTEM, METRICS_EVERY_STEPS,
        TASK_RESOURCE_PROFILES, PS_CPUS, EVALUATOR_CPUS, WORKER_CPUS, CLI_LOG_LEVEL);
  }

  /**
   * Checks every setting {@code conf} holds: a key under {@code spark.sparkps.} that is not one of
   * these, or a bad value, fails naming it. Called before anything launches.
   */
  public static void validate(RuntimeConfig conf) {
    scala.collection.Iterator<scala.Tuple2<String, String>> it = conf.getAll().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith("spark.sparkps.")) {
        setting(kv._1()).parse(kv._2());
      }
    }
  }

  /** The setting named {@code key}; IllegalArgumentException listing the known keys when there is none. */
  public static Setting<?> setting(String key) {
    for (Setting<?> s : all()) {
      if (s.key().equals(key)) {
        return s;
      }
    }
    throw new IllegalArgumentException("unknown SparkPS setting '" + key + "': the settings are "
        + all().stream().map(Setting::key).toList() + " (docs/configuration.md)");
  }

  /** The table of docs/configuration.md. */
  public static String markdownTable() {
    StringBuilder b = new StringBuilder("| key | values | default | read from | meaning |\n|---|---|---|---|---|\n");
    for (Setting<?> s : all()) {
      b.append("| `").append(s.key()).append("` | ").append(s.type()).append(" | `").append(s.defaultValue())
          .append("` | ").append(s.perSession() ? "the session, at each fit" : "the application's conf")
          .append(" | ").append(s.doc()).append(" |\n");
    }
    return b.toString();
  }

  private static Setting<String> choice(String key, String defaultValue, String doc, String fix, String... values) {
    List<String> allowed = List.of(values);
    return new Setting<>(key, String.join(", ", allowed), defaultValue, doc, v -> {
          String s = v.trim();
          for (String a : allowed) {
            if (a.equalsIgnoreCase(s)) {
              return a;
            }
          }
          throw bad(key, v, fix);
        });
  }

  /** Cores a task asks for: a number >= 1, or (where the default is {@code task}) {@code task}, read as null. */
  private static Setting<Integer> cpus(String key, String defaultValue, String doc) {
    boolean task = defaultValue.equals("task");
    return new Setting<>(key, task ? "cores >= 1, task" : "cores >= 1", defaultValue, doc, v -> {
      if (task && v.trim().equalsIgnoreCase("task")) {
        return null;
      }
      long n = parseLong(v);
      if (n < 1 || n > 4096) {
        throw bad(key, v, "give a number of cores >= 1, such as 1" + (task ? ", or task (spark.task.cpus)" : ""));
      }
      return (int) n;
    });
  }

  private static Setting<Boolean> bool(String key, boolean defaultValue, String doc, String fix) {
    return new Setting<>(key, "true, false", String.valueOf(defaultValue), doc, v -> switch (v.trim()
        .toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw bad(key, v, fix);
    });
  }

  private static long parseLong(String v) {
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static IllegalArgumentException bad(String key, String value, String fix) {
    return new IllegalArgumentException(key + " is '" + value + "': " + fix);
  }
}
