package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.apache.spark.ml.param.StringArrayParam;
import org.junit.jupiter.api.Test;

/**
 * The Python package's Params ({@code sparkps/ml/_params.py}) are generated from the Java classes:
 * every Param under its Java name, with its type, default and doc. This test renders them and
 * fails when the committed file differs, saying how to regenerate it
 * ({@code -Dsparkps.writePython=true}). The Python tests check the same against a live JVM.
 */
class PythonParamsTest {
  static final Path FILE = Path.of("python", "sparkps", "ml", "_params.py");

  @Test
  void theCommittedPythonParams_areTheJavaClassesParams() throws IOException {
    String rendered = render();
    if (Boolean.getBoolean("sparkps.writePython")) {
      Files.writeString(FILE, rendered, StandardCharsets.UTF_8);
    }
    String committed = Files.readString(FILE, StandardCharsets.UTF_8);
    assertEquals(rendered, committed, FILE + " is not what the Java Params give: regenerate it with "
        + "mvn -pl estimator test -Dtest=PythonParamsTest -Dsparkps.writePython=true");
  }

  @Test
  void everyParamOfBothClasses_isRendered_withItsTypeDefaultAndDoc() {
    String rendered = render();
    for (Params p : new Params[] {new Dl4jEstimator(), new Dl4jModel("model", null, new float[0])}) {
      for (Param<?> param : p.params()) {
        assertTrue(rendered.contains("    " + param.name() + " = Param(Params._dummy(), \"" + param.name() + "\", "
            + literal(param.doc())), param.name());
      }
    }
    assertTrue(rendered.contains("typeConverter=TypeConverters.toInt)"), rendered);
    assertTrue(rendered.contains("epochs=1,"), rendered);
    assertTrue(rendered.contains("consistency=\"SYNC\","), rendered);
    assertTrue(rendered.contains("numericCols=[],"), rendered);
    assertTrue(rendered.contains("evalEverySeconds=1.0,"), rendered);
    assertTrue(rendered.contains("asyncTables=False,"), rendered);
  }

  @Test
  void aParamOfATypePythonCannotTake_isRefusedNamingIt() {
    Params owner = new Dl4jEstimator();
    Param<Object> odd = new Param<>(owner, "odd", "a map, declared nowhere");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> converter(Dl4jEstimator.class, odd));
    assertTrue(e.getMessage().contains("odd"), e.getMessage());
  }

  /** The Python module: one Params mixin per Java class. */
  static String render() {
    StringBuilder b = new StringBuilder();
    b.append("# Generated from the Java classes io.sparkps.ml.Dl4jEstimator and io.sparkps.ml.Dl4jModel by the\n")
        .append("# estimator's PythonParamsTest: do not edit. Regenerate with\n")
        .append("#   mvn -pl estimator test -Dtest=PythonParamsTest -Dsparkps.writePython=true\n")
        .append("\"\"\"The Params of the SparkPS estimator and model, as the Java classes declare them.\"\"\"\n\n")
        .append("from typing import List, Optional\n\n")
        .append("from pyspark import keyword_only\n")
        .append("from pyspark.ml.param import Param, Params, TypeConverters\n");
    mixin(b, "_Dl4jEstimatorParams", "the Dl4jEstimator", new Dl4jEstimator());
    mixin(b, "_Dl4jModelParams", "the Dl4jModel", new Dl4jModel("model", null, new float[0]));
    return b.toString();
  }

  private static void mixin(StringBuilder b, String name, String what, Params java) {
    Param<?>[] params = java.params();
    b.append("\n\nclass ").append(name).append("(Params):\n");
    b.append("    \"\"\"The Params of ").append(what).append(", their defaults, getters and setters.\"\"\"\n\n");
    for (Param<?> p : params) {
      b.append("    ").append(p.name()).append(" = Param(Params._dummy(), \"").append(p.name()).append("\", ")
          .append(literal(p.doc())).append(",\n        typeConverter=TypeConverters.").append(converter(java.getClass(), p))
          .append(")\n");
    }
    b.append("\n    def __init__(self, *args):\n        super().__init__(*args)\n        self._setDefault(\n");
    for (Param<?> p : params) {
      if (java.hasDefault(p)) {
        b.append("            ").append(p.name()).append('=').append(value(java.getDefault(p).get())).append(",\n");
      }
    }
    b.append("        )\n");
    b.append("\n    @keyword_only\n    def setParams(\n        self,\n        *,\n");
    for (Param<?> p : params) {
      b.append("        ").append(p.name()).append(": Optional[").append(hint(java.getClass(), p)).append("] = None,\n");
    }
    b.append("    ):\n        \"\"\"Sets the Params given by name (keywords only).\"\"\"\n")
        .append("        return self._set(**self._input_kwargs)\n");
    for (Param<?> p : params) {
      String cap = Character.toUpperCase(p.name().charAt(0)) + p.name().substring(1);
      String hint = hint(java.getClass(), p);
      b.append("\n    def get").append(cap).append("(self) -> ").append(hint).append(":\n        \"\"\"Gets ")
          .append(p.name()).append(": ").append(docLine(p.doc())).append(".\"\"\"\n")
          .append("        return self.getOrDefault(self.").append(p.name()).append(")\n");
      b.append("\n    def set").append(cap).append("(self, value: ").append(hint).append("):\n        \"\"\"Sets ")
          .append(p.name()).append(".\"\"\"\n        return self._set(").append(p.name()).append("=value)\n");
    }
  }

  /** The PySpark TypeConverter of a Java Param's type. */
  static String converter(Class<?> owner, Param<?> p) {
    if (p instanceof IntParam || p instanceof LongParam) {
      return "toInt";
    } else if (p instanceof DoubleParam) {
      return "toFloat";
    } else if (p instanceof BooleanParam) {
      return "toBoolean";
    } else if (p instanceof StringArrayParam) {
      return "toListString";
    } else if (p.getClass() == Param.class && declaredType(owner, p).equals("java.lang.String")) {
      return "toString";
    }
    throw new IllegalStateException("Param " + p.name() + " (" + p.getClass().getName() + " of "
        + declaredType(owner, p) + ") has no Python counterpart: give it a simple type (String, int, long, double, "
        + "boolean, String[])");
  }

  /** The Python type of a Java Param's values. */
  static String hint(Class<?> owner, Param<?> p) {
    return switch (converter(owner, p)) {
      case "toInt" -> "int";
      case "toFloat" -> "float";
      case "toBoolean" -> "bool";
      case "toListString" -> "List[str]";
      default -> "str";
    };
  }

  /** The type argument of the field that declares an untyped {@code Param} ({@code Param<String>}: String). */
  private static String declaredType(Class<?> owner, Param<?> p) {
    for (Class<?> c = owner; c != null; c = c.getSuperclass()) {
      for (java.lang.reflect.Field f : c.getDeclaredFields()) {
        if (f.getName().equals(p.name()) && f.getGenericType() instanceof java.lang.reflect.ParameterizedType t) {
          return t.getActualTypeArguments()[0].getTypeName();
        }
      }
    }
    return "an undeclared type";
  }

  private static String value(Object v) {
    if (v instanceof String s) {
      return literal(s);
    } else if (v instanceof Boolean bool) {
      return bool ? "True" : "False";
    } else if (v instanceof Double d) {
      return d.toString().toLowerCase(Locale.ROOT);
    } else if (v instanceof Integer || v instanceof Long) {
      return v.toString();
    } else if (v instanceof String[] a) {
      return Arrays.stream(a).map(PythonParamsTest::literal).collect(Collectors.joining(", ", "[", "]"));
    }
    throw new IllegalStateException("a default of type " + v.getClass().getName() + " has no Python literal");
  }

  /** A Python string literal (double quotes, escapes for backslash, quote and newline). */
  static String literal(String s) {
    return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + '"';
  }

  private static String docLine(String doc) {
    return doc.replace("\\", "\\\\").replace("\"\"\"", "'''");
  }
}
