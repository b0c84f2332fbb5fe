package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.annotation.Internal;
import java.io.IOException;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * What users of the parameter server may touch, read from the compiled classes: the public API is
 * {@code io.sparkps.ps}, {@code io.sparkps.ps.spec} and {@code io.sparkps.ps.tls}; the internal
 * packages' public classes are all marked {@link Internal}, and no public signature of the API
 * (a public or protected constructor, method or field, a supertype, a nested type) names an
 * internal class, a class marked {@link Internal}, or a gRPC or Netty type (the API's users never
 * handle the transport; the members that hand SparkPS's own packages their TLS contexts are marked).
 */
class ApiSurfaceTest {
  private static final Set<String> INTERNAL_PACKAGES =
      Set.of("io.sparkps.ps.wire", "io.sparkps.ps.server", "io.sparkps.ps.bulk", "io.sparkps.ps.grpc",
          "io.sparkps.ps.client", "io.sparkps.ps.host");
  private static final Set<String> API_PACKAGES = Set.of("io.sparkps.ps", "io.sparkps.ps.spec", "io.sparkps.ps.tls",
      "io.sparkps.ps.annotation");

  @Test
  void everyPublicClassOfAnInternalPackage_isMarkedInternal() throws IOException {
    List<Class<?>> classes = classes();
    List<String> unmarked = new ArrayList<>();
    int internal = 0;
    for (Class<?> c : classes) {
      if (INTERNAL_PACKAGES.contains(c.getPackageName()) && Modifier.isPublic(c.getModifiers())
          && c.getEnclosingClass() == null && !c.isAnnotation()) {
        internal++;
        if (!c.isAnnotationPresent(Internal.class)) {
          unmarked.add(c.getName());
        }
      }
    }
    assertTrue(internal > 25, "the internal packages' public classes were found: " + internal);
    assertEquals(List.of(), unmarked, "public classes of internal packages without @Internal");
  }

  @Test
  void noPublicSignatureOfTheApi_namesAnInternalClass() throws IOException {
    Set<String> leaks = new TreeSet<>();
    int checked = 0;
    for (Class<?> c : classes()) {
      if (!API_PACKAGES.contains(c.getPackageName()) || !exposed(c)) {
        continue;
      }
      checked++;
      String at = c.getName();
      check(at + " extends", c.getGenericSuperclass(), leaks);
      for (Type t : c.getGenericInterfaces()) {
        check(at + " implements", t, leaks);
      }
      for (Field f : c.getDeclaredFields()) {
        if (visible(f) && !f.isAnnotationPresent(Internal.class)) {
          check(at + "." + f.getName(), f.getGenericType(), leaks);
        }
      }
      Set<Method> methods = new java.util.LinkedHashSet<>(List.of(c.getDeclaredMethods()));
      methods.addAll(List.of(c.getMethods()));  // inherited from a package-private base: API all the same
      for (Method m : methods) {
        if (visible(m) && (!m.isSynthetic() || m.isBridge())) {  // a bridge: inherited from a package-private base
          executable(at + "." + m.getName() + "()", m, leaks);
          if (!m.isAnnotationPresent(Internal.class)) {
            check(at + "." + m.getName() + "() returns", m.getGenericReturnType(), leaks);
          }
        }
      }
      for (Constructor<?> k : c.getDeclaredConstructors()) {
        if (visible(k) && !k.isSynthetic()) {
          executable(at + ".<init>", k, leaks);
        }
      }
    }
    assertTrue(checked > 20, "the API's classes were found: " + checked);
    assertEquals(Set.of(), leaks, "the API's public signatures that name internal classes or gRPC's and Netty's types "
        + "(gRPC's Netty is shaded under io.grpc)");
  }

  private static void executable(String at, Executable e, Set<String> leaks) {
    if (e.isAnnotationPresent(Internal.class)) {
      return;
    }
    for (Type t : e.getGenericParameterTypes()) {
      check(at + " takes", t, leaks);
    }
    for (Type t : e.getGenericExceptionTypes()) {
      check(at + " throws", t, leaks);
    }
  }

  /** A public class (or one nested in public classes all the way out) not marked internal. */
  private static boolean exposed(Class<?> c) {
    for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
      if (!Modifier.isPublic(k.getModifiers()) || k.isAnnotationPresent(Internal.class) || k.isAnonymousClass()
          || k.isLocalClass() || k.isSynthetic()) {
        return false;
      }
    }
    return true;
  }

  private static <M extends Member & AnnotatedElement> boolean visible(M m) {
    int mod = m.getModifiers();
    boolean extendable = !Modifier.isFinal(m.getDeclaringClass().getModifiers());
    return Modifier.isPublic(mod) || Modifier.isProtected(mod) && extendable;
  }

  private static void check(String at, Type type, Set<String> leaks) {
    check(at, type, leaks, new java.util.HashSet<>());
  }

  /** {@code seen}: the type variables met on the way down ({@code B extends Options<B>} ends). */
  private static void check(String at, Type type, Set<String> leaks, Set<TypeVariable<?>> seen) {
    if (type == null) {
      return;
    }
    if (type instanceof Class<?> c) {
      Class<?> k = c;
      while (k.isArray()) {
        k = k.getComponentType();
      }
      if (INTERNAL_PACKAGES.contains(k.getPackageName()) || k.isAnnotationPresent(Internal.class)
          || k.getPackageName().startsWith("io.grpc.")) {
        leaks.add(at + " " + k.getName());
      }
    } else if (type instanceof ParameterizedType p) {
      check(at, p.getRawType(), leaks, seen);
      for (Type a : p.getActualTypeArguments()) {
        check(at, a, leaks, seen);
      }
    } else if (type instanceof WildcardType w) {
      for (Type b : w.getUpperBounds()) {
        check(at, b, leaks, seen);
      }
      for (Type b : w.getLowerBounds()) {
        check(at, b, leaks, seen);
      }
    } else if (type instanceof GenericArrayType g) {
      check(at, g.getGenericComponentType(), leaks, seen);
    } else if (type instanceof TypeVariable<?> v && seen.add(v)) {
      for (Type b : v.getBounds()) {
        check(at, b, leaks, seen);
      }
    }
  }

  /** Every class compiled from ps-server's main sources under io.sparkps.ps, nested ones too. */
  private static List<Class<?>> classes() throws IOException {
    Path root = Path.of("target/classes");
    List<Class<?>> classes = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root.resolve("io/sparkps/ps"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
        String name = root.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
        if (name.startsWith("io.sparkps.ps.grpc.proto.") || name.endsWith("package-info")) {
          continue;
        }
        try {
          classes.add(Class.forName(name, false, ApiSurfaceTest.class.getClassLoader()));
        } catch (ClassNotFoundException e) {
          throw new AssertionError(name + " was compiled but does not load", e);
        }
      }
    }
    return classes;
  }
}
