package io.sparkps.spark;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.resource.ExecutorResourceRequest;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.ResourceProfileBuilder;
import org.apache.spark.resource.TaskResourceRequest;
import org.apache.spark.resource.TaskResourceRequests;

/**
 * What each role's tasks ask of their executors, and the Spark task resource profiles that give it
 * them. Spark sizes every executor of an application alike, and without profiles every task asks
 * for {@code spark.task.cpus} and each {@code spark.task.resource.*}: on a GPU cluster a ps task
 * would hold a GPU it never uses. Here a ps task asks for {@link SparkPsConf#PS_CPUS} cores and an
 * evaluator task for {@link SparkPsConf#EVALUATOR_CPUS}, neither for any custom resource; a worker
 * asks for {@link SparkPsConf#WORKER_CPUS} and for the whole of its executor's amount of each
 * custom resource (its GPUs).
 *
 * <p>Spark gives a stage such asks, on the executors it has, through a task resource profile
 * (stage-level scheduling with dynamic allocation off, which barrier mode requires): on a
 * standalone or {@code local-cluster} master since Spark 3.4, on YARN and Kubernetes since 3.5.1.
 * Where Spark cannot ({@code local[...]}, older versions), the run goes on as before, every task
 * asking for the application's task resources, and {@link #note()} says so; with {@link
 * SparkPsConf#TASK_RESOURCE_PROFILES} {@code true} it is refused instead. When every role's ask equals
 * the application's, no profile is made at all.
 */
final class RoleProfiles {
  /** One role's ask: cores, and an amount of each custom resource (none listed: none held). */
  record Ask(int cpus, Map<String, Double> resources) {
    @Override
    public String toString() {
      StringBuilder b = new StringBuilder().append(cpus).append(cpus == 1 ? " core" : " cores");
      resources.forEach((name, amount) -> b.append(", ").append(trim(amount)).append(' ').append(name));
      return b.toString();
    }
  }

  /** An executor's resources other than the custom ones (GPUs, FPGAs, ...). */
  private static final java.util.Set<String> BUILT_IN_EXECUTOR_RESOURCES = java.util.Set.of(ResourceProfile.CORES(),
      ResourceProfile.MEMORY(), ResourceProfile.OVERHEAD_MEM(), ResourceProfile.PYSPARK_MEM(), ResourceProfile.OFFHEAP_MEM());
  private final Map<Role, Ask> asks;
  private final Map<Role, ResourceProfile> profiles;
  private final String note;
  private final String caveat;

  private RoleProfiles(Map<Role, Ask> asks, Map<Role, ResourceProfile> profiles, String note, String caveat) {
    this.asks = asks;
    this.profiles = profiles;
    this.note = note;
    this.caveat = caveat;
  }

  /**
   * The profiles of a run on {@code sc}, from its application conf, registered with its resource
   * profile manager (an equal one registered before, by an earlier run, is used again).
   */
  static RoleProfiles of(SparkContext sc) {
    ResourceProfile defaults = sc.resourceProfileManager().defaultResourceProfile();
    RoleProfiles made = of(sc.getConf(), defaults, rp -> {
      try {
        return sc.resourceProfileManager().isSupported(rp);
      } catch (Exception e) { // (SparkException, which Scala does not declare)
        return false;
      }
    }, sc.master(), sc.version());
    Map<Role, ResourceProfile> registered = new EnumMap<>(Role.class);
    made.profiles.forEach((role, p) -> registered.put(role, registered(sc, p)));
    return new RoleProfiles(made.asks, registered, made.note, made.caveat);
  }

  /** {@code p} as {@code sc}'s resource profile manager holds it: an equal one it has, or {@code p}, added. */
  static ResourceProfile registered(SparkContext sc, ResourceProfile p) {
    scala.Option<ResourceProfile> same = sc.resourceProfileManager().getEquivalentProfile(p);
    if (same.isDefined()) {
      return same.get();
    }
    sc.resourceProfileManager().addResourceProfile(p);
    return p;
  }

  /**
   * The profiles for {@code conf}: {@code defaults} is the application's default profile (its
   * task and executor resources), {@code supported} whether Spark can run a stage with a profile.
   */
  static RoleProfiles of(SparkConf conf, ResourceProfile defaults, Predicate<ResourceProfile> supported, String master,
      String sparkVersion) {
    String mode = SparkPsConf.TASK_RESOURCE_PROFILES.get(conf);
    Map<String, Double> taskDefaults = new TreeMap<>();
    int taskCpus = 1;
    for (Map.Entry<String, TaskResourceRequest> e : defaults.taskResourcesJMap().entrySet()) {
      if (e.getKey().equals(ResourceProfile.CPUS())) {
        taskCpus = (int) e.getValue().amount();
      } else {
        taskDefaults.put(e.getKey(), e.getValue().amount());
      }
    }
    Map<String, Double> executorAmounts = new TreeMap<>();
    for (Map.Entry<String, ExecutorResourceRequest> e : defaults.executorResourcesJMap().entrySet()) {
      if (!BUILT_IN_EXECUTOR_RESOURCES.contains(e.getKey())) {
        executorAmounts.put(e.getKey(), (double) e.getValue().amount());
      }
    }
    Integer workerCpus = SparkPsConf.WORKER_CPUS.get(conf);
    Map<Role, Ask> asks = new EnumMap<>(Role.class);
    asks.put(Role.PS, new Ask(SparkPsConf.PS_CPUS.get(conf), Map.of()));
    asks.put(Role.EVALUATOR, new Ask(SparkPsConf.EVALUATOR_CPUS.get(conf), Map.of()));
    // (executorAmounts is sorted by name: the asks' descriptions come out alike every time)
    asks.put(Role.WORKER, new Ask(workerCpus == null ? taskCpus : workerCpus,
        java.util.Collections.unmodifiableMap(executorAmounts)));
    asks.put(Role.CHIEF, asks.get(Role.WORKER));
    Ask application = new Ask(taskCpus, taskDefaults);
    Map<Role, Ask> asked = new EnumMap<>(asks);
    asked.values().removeIf(application::equals);
    if (asked.isEmpty()) {
      return new RoleProfiles(Map.of(), Map.of(), null, null);
    }
    String differs = describe(asked);
    if (mode.equals("false")) {
      return new RoleProfiles(Map.of(), Map.of(), "task resource profiles are off (" + SparkPsConf.TASK_RESOURCE_PROFILES
          + "=false): every task asks for " + application + " (spark.task.*), not " + differs, null);
    }
    Map<Role, ResourceProfile> profiles = new EnumMap<>(Role.class);
    Map<Ask, ResourceProfile> built = new LinkedHashMap<>();
    for (Map.Entry<Role, Ask> e : asked.entrySet()) {
      profiles.put(e.getKey(), built.computeIfAbsent(e.getValue(), RoleProfiles::profile));
    }
    if (!supported.test(profiles.values().iterator().next())) {
      String why = "Spark " + sparkVersion + " on master " + master + " cannot give a stage task resources of its own "
          + "(task resource profiles with dynamic allocation off need a standalone or local-cluster master, Spark 3.4+, "
          + "or YARN or Kubernetes, Spark 3.5.1+)";
      if (mode.equals("true")) {
        throw new IllegalStateException(SparkPsConf.TASK_RESOURCE_PROFILES + " is true, but " + why + ": run on such a "
            + "cluster, or set it to auto (the roles then take spark.task.* as every task) or false");
      }
      return new RoleProfiles(Map.of(), Map.of(), why + ", so every task asks for " + application
          + " (spark.task.*), not " + differs, null);
    }
    return new RoleProfiles(asks, profiles, null, shareCaveat(sparkVersion, taskDefaults, asks.get(Role.WORKER)));
  }

  /**
   * Spark 3.5 counts a task's share of a custom resource in parts of the application's task
   * amount (0.5: two parts an address), and a task of another profile asking a whole address takes
   * one part of it, so another worker can be given the rest (SPARK-45527, fixed in Spark 4). Seen
   * here on {@code local-cluster}: two workers each holding the one GPU of one executor.
   */
  private static String shareCaveat(String sparkVersion, Map<String, Double> taskDefaults, Ask worker) {
    if (!sparkVersion.startsWith("3.")) {
      return null;
    }
    for (Map.Entry<String, Double> e : taskDefaults.entrySet()) {
      if (e.getValue() < 1 && worker.resources().getOrDefault(e.getKey(), 0.0) >= 1) {
        return "Spark " + sparkVersion + " counts a task's " + e.getKey() + " in parts of spark.task.resource."
            + e.getKey() + ".amount (" + trim(e.getValue()) + "), so workers asking a whole " + e.getKey()
            + " may share one (fixed in Spark 4): set spark.task.resource." + e.getKey() + ".amount=1 to give each "
            + "worker its own";
      }
    }
    return null;
  }

  private static String describe(Map<Role, Ask> asks) {
    StringBuilder b = new StringBuilder();
    asks.forEach((role, ask) -> {
      if (role != Role.CHIEF) {
        b.append(b.length() == 0 ? "" : "; ").append(role.name().toLowerCase()).append(": ").append(ask);
      }
    });
    return b.toString();
  }

  private static ResourceProfile profile(Ask ask) {
    TaskResourceRequests requests = new TaskResourceRequests().cpus(ask.cpus());
    ask.resources().forEach(requests::resource);
    return new ResourceProfileBuilder().require(requests).build();
  }

  private static String trim(double amount) {
    return amount == Math.rint(amount) ? Long.toString((long) amount) : Double.toString(amount);
  }

  /** What {@code role}'s tasks ask for, or null when they take the application's task resources. */
  Ask ask(Role role) {
    return profiles.containsKey(role) ? asks.get(role) : null;
  }

  /** The profile of {@code role}'s tasks, or null for the application's default. */
  ResourceProfile profile(Role role) {
    return profiles.get(role);
  }

  /** Whether some role's tasks ask for other resources than the application's, through a profile. */
  boolean any() {
    return !profiles.isEmpty();
  }

  /** Why the roles take the application's task resources although some ask for others; null when not so. */
  String note() {
    return note;
  }

  /** What the profiles cannot promise on this Spark (a warning for the run's log), or null. */
  String caveat() {
    return caveat;
  }

  /** {@code rdd} with {@code role}'s profile (itself when it has none). */
  <T> JavaRDD<T> apply(Role role, JavaRDD<T> rdd) {
    ResourceProfile p = profiles.get(role);
    return p == null ? rdd : rdd.withResources(p);
  }

  /** {@code rdd} with {@code role}'s profile (itself when it has none). */
  <T> RDD<T> apply(Role role, RDD<T> rdd) {
    ResourceProfile p = profiles.get(role);
    return p == null ? rdd : rdd.withResources(p);
  }

  /** One line for the run's log: each role's ask, or the note. */
  String describe() {
    if (note != null) {
      return note;
    }
    return !any() ? "every task asks for the application's task resources (spark.task.*)"
        : "task resources by role: " + describe(filtered());
  }

  private Map<Role, Ask> filtered() {
    Map<Role, Ask> out = new EnumMap<>(Role.class);
    profiles.keySet().forEach(r -> out.put(r, asks.get(r)));
    return out;
  }
}
