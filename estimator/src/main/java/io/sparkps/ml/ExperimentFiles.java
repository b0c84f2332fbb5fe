package io.sparkps.ml;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InvalidClassException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * An {@link Experiment} as a file that crosses to a driver elsewhere (YARN), written and read so
 * that nothing but the submitted experiment can run there:
 * <ul>
 *   <li>the file is private to its owner (mode 600) and its SHA-256 travels apart from it, in the
 *       application's arguments; a file whose digest differs is refused before it is parsed;
 *   <li>it is deserialized behind an allow-list: SparkPS's own classes, the JDK value classes an
 *       experiment holds, and exactly the further classes the submitter's experiment contains
 *       (its own InputFns and lambdas' classes), found when it was written; any other class is
 *       refused before it is loaded, so no {@code readObject} of another class ever runs;
 *   <li>depth, references, array lengths and bytes are bounded.
 * </ul>
 */
public final class ExperimentFiles {
  /** Largest experiment file read. */
  public static final long MAX_BYTES = 16 << 20;
  private static final String LIMITS = "maxdepth=32;maxrefs=100000;maxarray=1000000;maxbytes=" + MAX_BYTES;
  /** The classes any experiment may hold, besides those the submitter's adds. */
  private static final String BASE = "io.sparkps.**;java.lang.String;java.lang.Number;java.lang.Integer;java.lang.Long;"
      + "java.lang.Double;java.lang.Float;java.lang.Boolean;java.lang.Enum;java.lang.Object;"
      + "java.lang.invoke.SerializedLambda;java.util.ArrayList;java.util.HashMap;java.util.LinkedHashMap;"
      + "java.util.TreeMap;java.util.ImmutableCollections$*;java.util.CollSer;java.util.Collections$Unmodifiable*";

  /** A written experiment: where, its digest, and the classes beyond the base allow-list it holds. */
  public record Staged(Path file, String sha256, List<String> extraClasses) {}

  private ExperimentFiles() {}

  /** Writes {@code experiment} below {@code dir}, readable by its owner only. */
  public static Staged write(Experiment experiment, Path dir) throws IOException {
    byte[] bytes = serialize(experiment);
    Files.createDirectories(dir);
    Path file = dir.resolve("experiment-" + System.nanoTime() + ".bin");
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (UnsupportedOperationException notPosix) {
      Files.createFile(file);
    } catch (FileAlreadyExistsException e) {
      throw new IOException("the staging file " + file + " already exists: is another submission staging here?", e);
    }
    Files.write(file, bytes);
    return new Staged(file, sha256(bytes), extraClasses(bytes));
  }

  /**
   * Reads the experiment at {@code file}, which must have digest {@code sha256}, allowing the base
   * classes and {@code extraClasses}.
   */
  public static Experiment read(Path file, String sha256, List<String> extraClasses) throws IOException {
    long size = Files.size(file);
    if (size > MAX_BYTES) {
      throw new IOException(file + " is " + size + " bytes; an experiment file is at most " + MAX_BYTES);
    }
    byte[] bytes = Files.readAllBytes(file);
    String actual = sha256(bytes);
    if (!MessageDigest.isEqual(actual.getBytes(), sha256.toLowerCase(java.util.Locale.ROOT).getBytes())) {
      throw new IOException(file + " has SHA-256 " + actual + " but the submission named " + sha256
          + ": it is not the file that was submitted, and is not read");
    }
    for (String c : extraClasses) {
      if (!c.matches("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*")) {
        throw new IllegalArgumentException("'" + c + "' is not a class name: allow classes by their full names");
      }
    }
    String pattern = LIMITS + ";" + BASE + (extraClasses.isEmpty() ? "" : ";" + String.join(";", extraClasses)) + ";!*";
    ObjectInputFilter classes = ObjectInputFilter.Config.createFilter(pattern);
    String[] rejected = {"?"};
    ObjectInputFilter limits = ObjectInputFilter.Config.createFilter(LIMITS);
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
      // A lambda comes back as a hidden class, made by its (allowed) capturing class's
      // $deserializeLambda$; no stream can name a hidden class, so it is allowed within the limits.
      in.setObjectInputFilter(info -> {
        ObjectInputFilter.Status status = classes.checkInput(info);
        boolean lambda = info.serialClass() != null && info.serialClass().isHidden();
        if (status == ObjectInputFilter.Status.REJECTED && lambda
            && limits.checkInput(info) != ObjectInputFilter.Status.REJECTED) {
          return ObjectInputFilter.Status.ALLOWED;
        }
        if (status == ObjectInputFilter.Status.REJECTED) {
          rejected[0] = info.serialClass() != null ? "class " + info.serialClass().getName()
              : "a graph beyond the limits (" + LIMITS + "): depth " + info.depth() + ", references "
                  + info.references() + ", array length " + info.arrayLength() + ", bytes " + info.streamBytes();
        }
        return status;
      });
      Object o = in.readObject();
      if (!(o instanceof Experiment experiment)) {
        throw new IOException(file + " holds a " + o.getClass().getName() + ", not an Experiment");
      }
      return experiment;
    } catch (InvalidClassException e) {
      throw new IOException(file + " holds " + rejected[0] + ", outside the experiment's allow-list ("
          + e.getMessage() + "): only SparkPS's classes, JDK value classes and the classes the submission names "
          + "(--allow-class) are read", e);
    } catch (ClassNotFoundException e) {
      throw new IOException(file + " needs class " + e.getMessage() + ", which is not on this driver's class path: "
          + "ship the jar of your InputFns with the application", e);
    }
  }

  private static byte[] serialize(Experiment experiment) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ObjectOutputStream objects = new ObjectOutputStream(out)) {
      objects.writeObject(experiment);
    }
    return out.toByteArray();
  }

  /** The classes in {@code bytes} (our own experiment, just written) that the base list does not allow. */
  private static List<String> extraClasses(byte[] bytes) throws IOException {
    ObjectInputFilter base = ObjectInputFilter.Config.createFilter(BASE + ";!*");
    Set<String> extra = new TreeSet<>();
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
      in.setObjectInputFilter(info -> {
        Class<?> c = info.serialClass();
        while (c != null && c.isArray()) {
          c = c.getComponentType();
        }
        if (c != null && !c.isPrimitive() && !c.isHidden()
            && base.checkInput(new Only(c)) != ObjectInputFilter.Status.ALLOWED) {
          extra.add(c.getName());
        }
        return ObjectInputFilter.Status.ALLOWED;
      });
      in.readObject();
    } catch (ClassNotFoundException e) {
      throw new IOException("the experiment does not read back: " + e, e);
    }
    return new ArrayList<>(extra);
  }

  /** A filter query about one class alone. */
  private record Only(Class<?> serialClass) implements ObjectInputFilter.FilterInfo {
    @Override
    public long arrayLength() {
      return -1;
    }

    @Override
    public long depth() {
      return 1;
    }

    @Override
    public long references() {
      return 0;
    }

    @Override
    public long streamBytes() {
      return 0;
    }
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
