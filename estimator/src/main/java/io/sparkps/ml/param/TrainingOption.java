package io.sparkps.ml.param;

import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * One training option, declared once: its name, its doc, how a {@link TrainingConfig} holds it, and
 * how a {@link TrainingConfigBuilder} sets it, which is also its check (a value the builder refuses
 * is refused everywhere, with the builder's message) and, through {@link TrainingConfig#defaults()},
 * its default. The estimator's Params are made from these declarations, with their docs, defaults
 * and checks, and map to and from a config through them; {@link TrainingOptions#ALL} lists them.
 *
 * <p>In a Spark ML Param an option takes one of the {@link Form}s that Spark's Param JSON, PySpark and
 * Spark Connect carry: an enum is its name, the embedding columns their JSON, a list of columns an
 * array. The config keeps the typed value.
 *
 * @param <T> the option's type in a {@link TrainingConfig}
 */
public final class TrainingOption<T> {
  /** The type of an option's value in a Spark ML Param. */
  public enum Form { STRING, INT, LONG, DOUBLE, BOOLEAN, STRINGS }

  private final String name;
  private final Form form;
  private final String doc;
  private final Function<TrainingConfig, T> get;
  private final BiConsumer<TrainingConfigBuilder, T> set;
  private final Function<T, Object> toParam;
  private final Function<Object, T> fromParam;
  private final boolean checkedOnSet;

  private TrainingOption(String name, Form form, String doc, Function<TrainingConfig, T> get,
      BiConsumer<TrainingConfigBuilder, T> set, Function<T, Object> toParam, Function<Object, T> fromParam,
      boolean checkedOnSet) {
    this.checkedOnSet = checkedOnSet;
    this.name = name;
    this.form = form;
    this.doc = doc;
    this.get = get;
    this.set = set;
    this.toParam = toParam;
    this.fromParam = fromParam;
  }

  /** An option whose Param holds its value as it is ({@code form} says which Param). */
  @SuppressWarnings("unchecked")
  static <T> TrainingOption<T> of(String name, Form form, String doc, Function<TrainingConfig, T> get,
      BiConsumer<TrainingConfigBuilder, T> set) {
    return new TrainingOption<>(name, form, doc, get, set, v -> v, v -> (T) v, true);
  }

  /** An option whose Param holds it as {@code form}, converted both ways. */
  static <T> TrainingOption<T> converted(String name, Form form, String doc, Function<TrainingConfig, T> get,
      BiConsumer<TrainingConfigBuilder, T> set, Function<T, Object> toParam, Function<Object, T> fromParam) {
    return new TrainingOption<>(name, form, doc, get, set, toParam, fromParam, true);
  }

  /**
   * An option held as JSON, whose errors name the field at fault (a column's pooling, its dim): its
   * Param takes any text, and a bad value is refused, with that message, when the config is made.
   */
  static <T> TrainingOption<T> json(String name, String doc, Function<TrainingConfig, T> get,
      BiConsumer<TrainingConfigBuilder, T> set, Function<T, Object> toParam, Function<Object, T> fromParam) {
    return new TrainingOption<>(name, Form.STRING, doc, get, set, toParam, fromParam, false);
  }

  /** An enum option: its Param holds the constant's name. */
  static <E extends Enum<E>> TrainingOption<E> ofEnum(String name, Class<E> type, String doc,
      Function<TrainingConfig, E> get, BiConsumer<TrainingConfigBuilder, E> set) {
    return converted(name, Form.STRING, doc, get, set, Enum::name, v -> {
      try {
        return Enum.valueOf(type, (String) v);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(name + " is '" + v + "'; it must be one of "
            + List.of(type.getEnumConstants()));
      }
    });
  }

  /** The option's name: its Param's, its config getter's and its builder method's ({@code opt} + the name). */
  public String name() {
    return name;
  }

  /** What its Param holds. */
  public Form form() {
    return form;
  }

  /** What it means, with its range: its Param's doc. */
  public String doc() {
    return doc;
  }

  /** Its value in {@code config}. */
  public T get(TrainingConfig config) {
    return get.apply(config);
  }

  /** Its value in {@code config}, in its Param's form. */
  public Object paramValue(TrainingConfig config) {
    return toParam.apply(get.apply(config));
  }

  /** Sets it on {@code builder} from a value in its Param's form; refuses a bad value, naming the option. */
  public void setParamValue(TrainingConfigBuilder builder, Object value) {
    set.accept(builder, fromParam.apply(value));
  }

  /**
   * Whether its Param refuses, when set, what {@link #valid} refuses (else a bad value is refused,
   * with its own message, when the config is made).
   */
  public boolean checkedOnSet() {
    return checkedOnSet;
  }

  /** Whether the builder takes {@code value} (in its Param's form) for this option: its Param's validator. */
  public boolean valid(Object value) {
    try {
      setParamValue(TrainingConfig.builder(), value);
      return true;
    } catch (IllegalArgumentException | NullPointerException | ClassCastException e) {
      return false;
    }
  }

  @Override
  public String toString() {
    return name;
  }
}
