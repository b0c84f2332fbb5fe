package io.sparkps.spark;

import io.sparkps.ps.tls.PsTls;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;

/**
 * Decides whether a run's channels use TLS, and names the Spark settings that leave its secrets
 * exposed. TLS is on by default whenever the run spans more than one JVM (any master but
 * {@code local} and {@code local[...]}); {@link ClusterSpec.Builder#optTls} or the Spark conf
 * {@value #TLS_CONF} ({@code true}, {@code false} or {@code auto}) decide otherwise.
 */
final class RunSecurity {
  /** The Spark conf that turns TLS on or off when the {@link ClusterSpec} does not say. */
  static final String TLS_CONF = SparkPsConf.TLS_ENABLED.key();

  /** The run's TLS identity (null: plaintext) and the warnings to log once for it. */
  record Decision(PsTls tls, List<String> warnings) {}

  private RunSecurity() {}

  static Decision decide(SparkConf conf, ClusterSpec spec) {
    String master = conf.get("spark.master", "local");
    boolean acrossJvms = spansJvms(master);
    boolean on = spec.tls() != null ? spec.tls() : fromConf(SparkPsConf.TLS_ENABLED.get(conf), acrossJvms);
    List<String> warnings = new ArrayList<>();
    if (acrossJvms && !on) {
      warnings.add("TLS is turned off for a SparkPS run across JVMs (master " + master + "): the run's token and "
          + "its model cross the network in clear text, and anyone who reads one token can take over its parameter "
          + "servers. Leave TLS on (" + TLS_CONF + "=auto) unless no one else can reach this network.");
    }
    if (acrossJvms && !(conf.getBoolean("spark.authenticate", false)
        && conf.getBoolean("spark.network.crypto.enabled", false))) {
      warnings.add("spark.authenticate=" + conf.getBoolean("spark.authenticate", false)
          + " and spark.network.crypto.enabled=" + conf.getBoolean("spark.network.crypto.enabled", false)
          + ": SparkPS ships its run token" + (on ? " and TLS key" : "") + " to the executors inside task closures, "
          + "which Spark's RPC then carries unauthenticated or unencrypted. Set both to true (on YARN the secret is "
          + "made for you) to keep them from others on the network.");
    }
    return new Decision(on ? PsTls.generate() : null, List.copyOf(warnings));
  }

  /** Whether tasks of {@code master} run in other JVMs than the driver. */
  static boolean spansJvms(String master) {
    return !(master.equals("local") || master.startsWith("local["));
  }

  private static boolean fromConf(String value, boolean acrossJvms) {
    return value.equals("auto") ? acrossJvms : Boolean.parseBoolean(value);
  }
}
