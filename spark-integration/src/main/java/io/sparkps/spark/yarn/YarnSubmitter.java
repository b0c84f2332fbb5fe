package io.sparkps.spark.yarn;

import io.sparkps.spark.Role;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.launcher.SparkAppHandle;
import org.apache.spark.launcher.SparkLauncher;

/**
 * Submits a SparkPS application (a CLI {@code train} run, an Experiment, any main class of the
 * shaded jar) to YARN, as tf-yarn's {@code run_on_yarn}: a {@link TaskSpec} per role, a queue,
 * files and jars to ship, environment variables, Hadoop file systems that need delegation tokens,
 * the application's name and attempts; client or cluster deploy mode. The mapping to Spark
 * settings is a {@link YarnPlan} ({@link #plan()}); {@link #dryRun()} prints the resulting
 * spark-submit command; {@link #preflight} checks it against the cluster before anything is
 * submitted; {@link #submit()} returns a {@link YarnRun} at once.
 */
public final class YarnSubmitter {
  private final Builder b;
  private final YarnPlan plan;

  private YarnSubmitter(Builder b) {
    this.b = b;
    this.plan = YarnPlan.of(b.specs, b.env);
  }

  /** A builder; {@link Builder#setApplication} and the chief and ps TaskSpecs are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The Spark settings and the notes on what they could not express per role. */
  public YarnPlan plan() {
    return plan;
  }

  /** The deploy mode: client (the driver runs here) or cluster (in a YARN container). */
  public String deployMode() {
    return b.deployMode;
  }

  /** The queue, or null for the default. */
  public String queue() {
    return b.queue;
  }

  /** Every Spark setting of the submission, the plan's included. */
  public Map<String, String> sparkConf() {
    Map<String, String> conf = new LinkedHashMap<>(plan.conf());
    conf.put("spark.app.name", b.appName);
    if (b.queue != null) {
      conf.put("spark.yarn.queue", b.queue);
    }
    conf.put("spark.yarn.maxAppAttempts", Integer.toString(b.maxAttempts));
    if (!b.hadoopFileSystems.isEmpty()) {
      conf.put("spark.kerberos.access.hadoopFileSystems", String.join(",", b.hadoopFileSystems));
    }
    if (!b.packages.isEmpty()) {
      conf.put("spark.jars.packages", String.join(",", b.packages));
    }
    if (b.driverMemoryMb > 0) {
      conf.put("spark.driver.memory", b.driverMemoryMb + "m");
    }
    if (b.driverCores > 0) {
      conf.put("spark.driver.cores", Integer.toString(b.driverCores));
    }
    conf.putAll(b.conf);
    return conf;
  }

  /** The spark-submit command this submitter runs, one argument per word (for logs and reviews). */
  public List<String> command() {
    List<String> cmd = new ArrayList<>(List.of("spark-submit", "--master", "yarn", "--deploy-mode", b.deployMode));
    sparkConf().forEach((k, v) -> {
      cmd.add("--conf");
      cmd.add(k + "=" + v);
    });
    if (!b.files.isEmpty()) {
      cmd.add("--files");
      cmd.add(String.join(",", b.files));
    }
    if (!b.jars.isEmpty()) {
      cmd.add("--jars");
      cmd.add(String.join(",", b.jars));
    }
    cmd.add("--class");
    cmd.add(b.mainClass);
    cmd.add(b.appResource);
    cmd.addAll(b.args);
    return cmd;
  }

  /** The command as one shell line, quoted where needed, followed by the plan's notes as comments. */
  public String dryRun() {
    StringBuilder line = new StringBuilder();
    for (String word : command()) {
      line.append(line.length() == 0 ? "" : " ").append(word.matches("[A-Za-z0-9_./:=,@%+-]+") ? word
          : "'" + word.replace("'", "'\\''") + "'");
    }
    for (String note : plan.notes()) {
      line.append("\n# ").append(note);
    }
    return line.toString();
  }

  /** Checks queue, labels and sizes against the cluster of {@code yarnConf}; see {@link YarnPreflight}. */
  public void preflight(org.apache.hadoop.conf.Configuration yarnConf) {
    YarnPreflight.check(yarnConf, this);
  }

  /**
   * Submits (with {@code spark-submit} of the Spark home given, or {@code SPARK_HOME}) and
   * returns at once; the run's handle follows the application's id and state.
   */
  public YarnRun submit() throws IOException {
    return submit(null);
  }

  /** {@link #submit()}, with the cluster's configuration so that the run can ask its ResourceManager. */
  public YarnRun submit(org.apache.hadoop.conf.Configuration yarnConf) throws IOException {
    SparkLauncher launcher = new SparkLauncher(b.launcherEnv).setMaster("yarn").setDeployMode(b.deployMode)
        .setAppName(b.appName).setAppResource(b.appResource).setMainClass(b.mainClass).redirectError();
    if (b.sparkHome != null) {
      launcher.setSparkHome(b.sparkHome);
    }
    if (b.log != null) {
      launcher.redirectOutput(b.log.toFile());
    }
    sparkConf().forEach(launcher::setConf);
    b.files.forEach(launcher::addFile);
    b.jars.forEach(launcher::addJar);
    launcher.addAppArgs(b.args.toArray(String[]::new));
    SparkAppHandle handle;
    try {
      handle = launcher.startApplication();
    } catch (IOException | RuntimeException e) {
      YarnRun.delete(b.deleteWhenDone);
      throw e;
    }
    return new YarnRun(handle, b.appName, yarnConf, b.deleteWhenDone);
  }

  /** Builds a {@link YarnSubmitter}. */
  public static final class Builder {
    private final Map<Role, TaskSpec> specs = new EnumMap<>(Role.class);
    private final Map<String, String> env = new LinkedHashMap<>();
    private final Map<String, String> conf = new LinkedHashMap<>();
    private final Map<String, String> launcherEnv = new LinkedHashMap<>();
    private final List<String> files = new ArrayList<>();
    private final List<String> jars = new ArrayList<>();
    private final List<String> packages = new ArrayList<>();
    private final List<String> hadoopFileSystems = new ArrayList<>();
    private final List<java.nio.file.Path> deleteWhenDone = new ArrayList<>();
    private List<String> args = List.of();
    private String appResource;
    private String mainClass;
    private String appName = "sparkps";
    private String queue;
    private String deployMode = "client";
    private String sparkHome;
    private java.nio.file.Path log;
    private int maxAttempts = 1;
    private int driverMemoryMb;
    private int driverCores;

    private Builder() {}

    /** The TaskSpec of {@code role} (chief: 1 instance; ps: at least 1; evaluator: 0 or 1). */
    public Builder setTaskSpec(Role role, TaskSpec spec) {
      specs.put(Objects.requireNonNull(role, "role"), Objects.requireNonNull(spec, "spec"));
      return this;
    }

    /** What to run: the shaded jar (a path or URI), its main class and arguments. */
    public Builder setApplication(String appResource, String mainClass, List<String> args) {
      this.appResource = Objects.requireNonNull(appResource, "appResource");
      this.mainClass = Objects.requireNonNull(mainClass, "mainClass");
      this.args = List.copyOf(args);
      return this;
    }

    /** The YARN queue. */
    public Builder optQueue(String name) {
      queue = Objects.requireNonNull(name, "queue");
      return this;
    }

    /** client (default) or cluster. */
    public Builder optDeployMode(String mode) {
      if (!mode.equals("client") && !mode.equals("cluster")) {
        throw new IllegalArgumentException("deploy mode '" + mode + "' is neither client nor cluster");
      }
      deployMode = mode;
      return this;
    }

    /** Files shipped to every container's working directory (tf-yarn's files). */
    public Builder optFiles(List<String> paths) {
      files.addAll(paths);
      return this;
    }

    /** Jars added to the driver's and executors' class paths. */
    public Builder optJars(List<String> paths) {
      jars.addAll(paths);
      return this;
    }

    /** Maven coordinates of packages to add (group:artifact:version), resolved by spark-submit. */
    public Builder optPackages(List<String> coordinates) {
      packages.addAll(coordinates);
      return this;
    }

    /** An environment variable of the driver (cluster mode) and the executors. */
    public Builder optEnv(String name, String value) {
      env.put(name, value);
      return this;
    }

    /** Hadoop file systems beyond the default that need delegation tokens (e.g. {@code hdfs://nn2:8020}). */
    public Builder optHadoopFileSystems(List<String> uris) {
      hadoopFileSystems.addAll(uris);
      return this;
    }

    /** The application's name in YARN (default sparkps). */
    public Builder optAppName(String name) {
      appName = Objects.requireNonNull(name, "name");
      return this;
    }

    /** Attempts of the application master (default 1: a failed run is reported, not rerun). */
    public Builder optMaxAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("max attempts is " + attempts + "; it must be >= 1");
      }
      maxAttempts = attempts;
      return this;
    }

    /** The driver's memory and cores (the application master's in cluster mode). */
    public Builder optDriver(int memoryMb, int cores) {
      driverMemoryMb = memoryMb;
      driverCores = cores;
      return this;
    }

    /** Any other Spark setting (applied last, so it wins). */
    public Builder optConf(String key, String value) {
      conf.put(key, value);
      return this;
    }

    /** The Spark installation whose spark-submit to run (default: {@code SPARK_HOME}). */
    public Builder optSparkHome(String path) {
      sparkHome = path;
      return this;
    }

    /** Environment of the spark-submit process (e.g. {@code HADOOP_CONF_DIR}). */
    public Builder optLauncherEnv(String name, String value) {
      launcherEnv.put(name, value);
      return this;
    }

    /**
     * A local file (a staged experiment) to delete once the application has ended, however it
     * ends, or when this JVM exits before that.
     */
    public Builder optDeleteWhenDone(java.nio.file.Path file) {
      deleteWhenDone.add(file);
      file.toFile().deleteOnExit();
      return this;
    }

    /** Where spark-submit's output goes (default: inherited). */
    public Builder optLog(java.nio.file.Path file) {
      log = file;
      return this;
    }

    /** The submitter; fails naming a missing or inconsistent setting. */
    public YarnSubmitter build() {
      if (appResource == null) {
        throw new IllegalArgumentException("no application: call setApplication(jar, mainClass, args)");
      }
      return new YarnSubmitter(this);
    }
  }
}
