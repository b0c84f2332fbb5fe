package io.sparkps.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine;

/** {@code sparkps --version}: the versions this build was made with. */
final class Versions implements CommandLine.IVersionProvider {
  @Override
  public String[] getVersion() throws IOException {
    Properties p = new Properties();
    try (InputStream in = Versions.class.getResourceAsStream("/io/sparkps/ml/versions.properties")) {
      if (in != null) {
        p.load(in);
      }
    }
    return new String[] {"SparkPS " + p.getProperty("sparkps", "?") + " (Spark " + p.getProperty("spark.built", "?")
        + ", DL4J " + p.getProperty("dl4j", "?") + ")"};
  }
}
