package io.sparkps.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/** Local Spark contexts for tests: loopback only, no UI, sized explicitly. */
final class SparkTestSupport {
  private SparkTestSupport() {}

  static SparkConf conf(String master) {
    return new SparkConf().setMaster(master).setAppName("sparkps-test")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false")
        .set("spark.sql.shuffle.partitions", "4")
        .set("spark.executorEnv.OMP_NUM_THREADS", "1");
  }

  static JavaSparkContext local(int slots) {
    return new JavaSparkContext(conf("local[" + slots + "]"));
  }
}
