package io.sparkps.ml;

/** Captures Spark's "task of very large size" warnings (tests keep TaskSetManager's log off otherwise). */
public final class TaskSizeWarnings {
  private TaskSizeWarnings() {}

  /** Spark's warnings of large tasks while {@code action} runs (its TaskSetManager logs them). */
  public static java.util.List<String> during(Runnable action) {
    String name = "org.apache.spark.scheduler.TaskSetManager";
    org.apache.logging.log4j.core.LoggerContext ctx =
        (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
    java.util.List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
    org.apache.logging.log4j.core.appender.AbstractAppender capture =
        new org.apache.logging.log4j.core.appender.AbstractAppender("capture-task-size", null, null, true,
            org.apache.logging.log4j.core.config.Property.EMPTY_ARRAY) {
          @Override
          public void append(org.apache.logging.log4j.core.LogEvent event) {
            String m = event.getMessage().getFormattedMessage();
            if (m.contains("very large size")) {
              seen.add(m);
            }
          }
        };
    capture.start();
    org.apache.logging.log4j.core.config.LoggerConfig logger = ctx.getConfiguration().getLoggerConfig(name);
    org.apache.logging.log4j.Level before = logger.getLevel();
    logger.addAppender(capture, org.apache.logging.log4j.Level.WARN, null);
    logger.setLevel(org.apache.logging.log4j.Level.WARN);
    ctx.updateLoggers();
    try {
      action.run();
    } finally {
      logger.removeAppender(capture.getName());
      logger.setLevel(before);
      ctx.updateLoggers();
    }
    return seen;
  }
}
