package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

class RunSecurityTest {
  private static final ClusterSpec AUTO = ClusterSpec.builder().setNumPs(1).setNumWorkers(1).build();

  private static SparkConf conf(String master) {
    return new SparkConf(false).set("spark.master", master);
  }

  @Test
  void tlsIsOn_exactlyWhenTheRunSpansJvms() {
    for (String local : new String[] {"local", "local[2]", "local[*]", "local[2,3]"}) {
      RunSecurity.Decision d = RunSecurity.decide(conf(local), AUTO);
      assertNull(d.tls(), local);
      assertEquals(0, d.warnings().size(), local + ": " + d.warnings());
    }
    for (String remote : new String[] {"local-cluster[2,1,1024]", "yarn", "spark://host:7077", "k8s://https://k:443"}) {
      assertNotNull(RunSecurity.decide(conf(remote), AUTO).tls(), remote);
    }
  }

  @Test
  void anExplicitChoice_wins_andTurningTlsOffAcrossJvms_isWarnedAbout() {
    ClusterSpec off = ClusterSpec.builder().setNumPs(1).setNumWorkers(1).optTls(false).build();
    ClusterSpec on = ClusterSpec.builder().setNumPs(1).setNumWorkers(1).optTls(true).build();
    RunSecurity.Decision d = RunSecurity.decide(conf("yarn").set(RunSecurity.TLS_CONF, "true"), off);
    assertNull(d.tls());
    assertTrue(d.warnings().get(0).contains("TLS is turned off") && d.warnings().get(0).contains("clear text"),
        d.warnings().toString());
    assertNotNull(RunSecurity.decide(conf("local[2]"), on).tls());
    assertNull(RunSecurity.decide(conf("yarn").set(RunSecurity.TLS_CONF, "false"), AUTO).tls());
    assertNotNull(RunSecurity.decide(conf("local").set(RunSecurity.TLS_CONF, " TRUE "), AUTO).tls());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RunSecurity.decide(conf("yarn").set(RunSecurity.TLS_CONF, "yes"), AUTO));
    assertTrue(e.getMessage().contains(RunSecurity.TLS_CONF) && e.getMessage().contains("true, false or auto"),
        e.getMessage());
  }

  @Test
  void sparkWithoutAuthenticationOrEncryption_isWarnedAbout_whenTheRunSpansJvms() {
    RunSecurity.Decision open = RunSecurity.decide(conf("yarn"), AUTO);
    assertEquals(1, open.warnings().size(), open.warnings().toString());
    assertTrue(open.warnings().get(0).contains("spark.authenticate=false")
        && open.warnings().get(0).contains("token and TLS key"), open.warnings().get(0));
    SparkConf authOnly = conf("yarn").set("spark.authenticate", "true");
    assertTrue(RunSecurity.decide(authOnly, AUTO).warnings().get(0).contains("spark.network.crypto.enabled=false"));
    SparkConf secured = conf("yarn").set("spark.authenticate", "true").set("spark.network.crypto.enabled", "true");
    assertEquals(0, RunSecurity.decide(secured, AUTO).warnings().size());
  }
}
