package io.sparkps.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes every record of a run (each worker step at the run's metrics interval, each evaluation)
 * to {@code metrics.jsonl} in the run directory as it arrives (one JSON object a line: time,
 * seconds since the start, role, index, step, examples, metrics), flushed to readers at least
 * every quarter second, and keeps them for the report.
 */
final class RunRecorder implements ProgressListener, AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One report with when it arrived. */
  record Event(double seconds, TaskProgress progress) {}

  private final BufferedWriter out;
  private final long t0 = System.nanoTime();
  private final List<Event> events = new ArrayList<>();
  private static final long FLUSH_NANOS = 250_000_000L;
  private long lastFlush;

  private final org.apache.hadoop.fs.FSDataOutputStream stream;

  /** A recorder writing to {@code stream} (flushed to readers after every line). */
  RunRecorder(org.apache.hadoop.fs.FSDataOutputStream stream) {
    this.stream = stream;
    this.out = new BufferedWriter(new java.io.OutputStreamWriter(stream, StandardCharsets.UTF_8));
  }

  @Override
  public synchronized void onProgress(TaskProgress p) {
    if (p.role() == Role.PS || p.metrics().isEmpty()) {
      return;
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    events.add(new Event(seconds, p));
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("time", Instant.now().toString());
    line.put("seconds", Math.round(seconds * 1000) / 1000.0);
    line.put("role", p.role().name().toLowerCase());
    line.put("index", p.index());
    line.put("step", p.step());
    line.put("examples", p.examples());
    Map<String, Object> metrics = new LinkedHashMap<>();
    p.metrics().forEach((k, v) -> metrics.put(k, Double.isFinite(v) ? v : v.toString()));
    line.put("metrics", metrics);
    try {
      out.write(JSON.writeValueAsString(line));
      out.newLine();
      long now = System.nanoTime();
      // readers see the lines within a quarter second, and a step pays no flush of its own
      if (now - lastFlush >= FLUSH_NANOS || p.role() == Role.EVALUATOR) {
        out.flush();
        stream.hflush();
        lastFlush = now;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write metrics.jsonl", e);
    }
  }

  @Override
  public void onEnd(JobStatus status, Throwable failure) {
    close();
  }

  /** The reports so far, oldest first. */
  synchronized List<Event> events() {
    return List.copyOf(events);
  }

  @Override
  public synchronized void close() {
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
