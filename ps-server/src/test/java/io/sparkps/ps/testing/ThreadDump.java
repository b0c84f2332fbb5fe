package io.sparkps.ps.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Every live thread of a process, by Java thread id (never reused within a JVM): this JVM's from
 * {@link Thread#getAllStackTraces()}, another's from {@code jstack}. {@link #leftSince} finds the
 * threads a piece of work left behind, whatever their names (SparkPS's, gRPC's, Netty's, anyone's).
 */
public final class ThreadDump {
  /** One thread: its id, name, state and stack (frames as class.method). */
  public record Info(long id, String name, String state, List<String> frames) {
    /** The name with its numbers as '#': the threads of one pool share it. */
    String pattern() {
      return name.replaceAll("\\d+", "#");
    }

    boolean inStack(String frame) {
      return frames.stream().anyMatch(f -> f.endsWith(frame));
    }

    @Override
    public String toString() {
      return "\"" + name + "\" " + state + frames.stream().limit(6).map(f -> "\n      at " + f).collect(Collectors.joining());
    }
  }

  private static final Pattern HEADER = Pattern.compile("^\"(.*)\" #(\\d+) .*");
  private static final Pattern STATE = Pattern.compile("^\\s+java.lang.Thread.State: (\\w+).*");
  private static final Pattern FRAME = Pattern.compile("^\\s+at ([\\w$.<>/]+)\\(.*");

  private ThreadDump() {}

  /** This JVM's live threads. */
  public static Map<Long, Info> ofThisJvm() {
    Map<Long, Info> out = new LinkedHashMap<>();
    Thread.getAllStackTraces().forEach((t, stack) -> {
      if (t.isAlive()) {
        out.put(t.getId(), new Info(t.getId(), t.getName(), t.getState().name(), Arrays.stream(stack)
            .map(f -> f.getClassName() + "." + f.getMethodName()).toList()));
      }
    });
    return out;
  }

  /** The live threads of process {@code pid} (this JVM's own directly, another's with this JDK's jstack). */
  public static Map<Long, Info> of(long pid) throws IOException, InterruptedException {
    return pid == ProcessHandle.current().pid() ? ofThisJvm() : jstack(pid);
  }

  static Map<Long, Info> jstack(long pid) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jstack").toString(),
        Long.toString(pid)).redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("jstack " + pid + " failed: " + text.lines().limit(5).collect(Collectors.joining("; ")));
    }
    return parse(text);
  }

  static Map<Long, Info> parse(String jstack) {
    Map<Long, Info> out = new LinkedHashMap<>();
    String[] lines = jstack.split("\n");
    for (int i = 0; i < lines.length; i++) {
      Matcher h = HEADER.matcher(lines[i]);
      if (!h.matches()) {
        continue;
      }
      String state = "RUNNABLE";
      List<String> frames = new ArrayList<>();
      int j = i + 1;
      for (; j < lines.length && !lines[j].isBlank(); j++) {
        Matcher s = STATE.matcher(lines[j]);
        Matcher f = FRAME.matcher(lines[j]);
        if (s.matches()) {
          state = s.group(1);
        } else if (f.matches()) {
          String frame = f.group(1);
          frames.add(frame.contains("/") ? frame.substring(frame.lastIndexOf('/') + 1) : frame);
        }
      }
      out.put(Long.parseLong(h.group(2)), new Info(Long.parseLong(h.group(2)), h.group(1), state, List.copyOf(frames)));
      i = j;
    }
    return out;
  }

  private static boolean isOurs(Info t) {
    return t.name().startsWith("sparkps") || t.name().startsWith("grpc-");
  }

  /**
   * SparkPS's and gRPC's threads ("sparkps*", "grpc-*"): none may live once every run, client and
   * server of a process has ended (gRPC's shared pools end 1 s after their last user). A warm-up
   * that leaked would otherwise hide its leak in the "before" of {@link #leftSince}.
   */
  public static List<Info> ours(Map<Long, Info> threads) {
    return threads.values().stream().filter(ThreadDump::isOurs).toList();
  }

  /**
   * Polls this JVM every 100 ms, for at most {@code timeout}, until no thread is left since
   * {@code before} ({@link #leftSince}); returns the threads still left then (none on success).
   */
  public static List<Info> awaitLeftSince(Map<Long, Info> before, java.time.Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<Info> left;
    do {
      Thread.sleep(100);
      left = leftSince(before, ofThisJvm());
    } while (!left.isEmpty() && System.nanoTime() < deadline);
    return left;
  }

  /**
   * The threads of {@code after} that {@code before} lacks and that stay: every new thread, except
   * an idle pool worker that ends by itself (a timed wait for work in a ThreadPoolExecutor, a
   * ForkJoinPool's wait), an idle worker of a pool that already had threads before (the JVM's or
   * Spark's pools growing to their size), and another library's Netty event loop (Spark starts
   * the loops of its RPC and shuffle servers one by one, as connections first reach them).
   * SparkPS's and gRPC's own threads ("sparkps*", "grpc-*") are never excused: after a run they
   * must all be gone.
   */
  public static List<Info> leftSince(Map<Long, Info> before, Map<Long, Info> after) {
    Set<String> pools = before.values().stream().map(Info::pattern).collect(Collectors.toSet());
    List<Info> left = new ArrayList<>();
    for (Info t : after.values()) {
      if (before.containsKey(t.id())) {
        continue;
      }
      boolean ours = isOurs(t);
      boolean idleWorker = t.inStack("ThreadPoolExecutor.getTask") || t.inStack("ForkJoinPool.awaitWork");
      boolean endsByItself = idleWorker && (t.state().equals("TIMED_WAITING") || t.inStack("ForkJoinPool.awaitWork"));
      // Netty 4.1's loops (NioEventLoop, EpollEventLoop) and 4.2's (SingleThreadIoEventLoop, Spark 4's).
      boolean eventLoop = t.inStack("NioEventLoop.run") || t.inStack("EpollEventLoop.run")
          || t.inStack("SingleThreadIoEventLoop.run");
      boolean poolGrowth = idleWorker && pools.contains(t.pattern());
      if (ours || !(endsByItself || poolGrowth || eventLoop)) {
        left.add(t);
      }
    }
    return left;
  }
}
