package io.sparkps.ml.datasets;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Click-through data of Criteo's shape, generated: a {@code label} (1.0 for a click), 13 count-like
 * numeric columns {@code I1..I13} and 26 categorical columns {@code C1..C26} of 64-bit ids (null
 * where missing), with per-field cardinalities like Criteo Kaggle's (or scaled down) and
 * Zipf-distributed ids. Labels are drawn from a planted model, so the best AUC a model can reach
 * is known: {@link #plantedAuc} scores held-out rows with it.
 *
 * <p>Row {@code i} of a generator is the same in every call, partitioning and machine; training
 * and held-out sets are disjoint ranges of row indices. Nothing is downloaded and no table is held
 * in memory. Build one with {@link #builder()}.
 */
public final class ClickThroughData {
  /**
   * Distinct values per categorical field in Criteo Kaggle's {@code train.txt} (as the DLRM and
   * TorchRec configurations for that data set list them): 33.76 million in all.
   */
  public static final List<Long> CRITEO_KAGGLE_CARDINALITIES = List.of(1460L, 583L, 10131227L, 2202608L, 305L, 24L,
      12517L, 633L, 3L, 93145L, 5683L, 8351593L, 3194L, 27L, 14992L, 5461306L, 10L, 5652L, 2173L, 4L, 7046547L, 18L,
      15L, 286181L, 105L, 142572L);
  /** Criteo's number of numeric (integer) fields. */
  public static final int CRITEO_NUMERIC_FIELDS = 13;
  /** The column of the click (1.0) or not (0.0). */
  public static final String LABEL = "label";
  /** The column {@link #withPlantedScore} adds: the planted model's click probability. */
  public static final String PLANTED_SCORE = "planted_probability";

  private final PlantedClickModel model;

  private ClickThroughData(PlantedClickModel model) {
    this.model = model;
  }

  /** A builder with Criteo Kaggle's shape at full size, seed 1. */
  public static Builder builder() {
    return new Builder();
  }

  /** The numeric columns' names, {@code I1..In}. */
  public List<String> numericColumns() {
    List<String> names = new ArrayList<>();
    for (int j = 1; j <= model.numeric; j++) {
      names.add("I" + j);
    }
    return names;
  }

  /** The categorical columns' names, {@code C1..Cn}. */
  public List<String> categoricalColumns() {
    List<String> names = new ArrayList<>();
    for (int f = 1; f <= model.cardinalities.length; f++) {
      names.add("C" + f);
    }
    return names;
  }

  /** Each categorical field's number of distinct ids, in column order. */
  public List<Long> cardinalities() {
    return Arrays.stream(model.cardinalities).boxed().toList();
  }

  /** The rows' schema: label, the numeric columns (double), the categorical ones (nullable long). */
  public StructType schema() {
    List<StructField> fields = new ArrayList<>(List.of(DataTypes.createStructField(LABEL, DataTypes.DoubleType, false)));
    numericColumns().forEach(c -> fields.add(DataTypes.createStructField(c, DataTypes.DoubleType, false)));
    categoricalColumns().forEach(c -> fields.add(DataTypes.createStructField(c, DataTypes.LongType, true)));
    return DataTypes.createStructType(fields);
  }

  /**
   * Rows {@code [first, first + count)} of this generator as a DataFrame of {@code partitions}
   * partitions, computed where Spark runs them (e.g. rows 0 to 10^6 to train, 10^6 to 1.1 10^6 to test).
   */
  public Dataset<Row> rows(SparkSession spark, long first, long count, int partitions) {
    if (first < 0 || count < 0 || partitions < 1) {
      throw new IllegalArgumentException("rows(first, count, partitions) needs first >= 0, count >= 0 and "
          + "partitions >= 1, got " + first + ", " + count + ", " + partitions);
    }
    return spark.range(first, first + count, 1, partitions).as(Encoders.LONG()).mapPartitions(drawer(model),
        Encoders.row(schema()));
  }

  /** {@code rows} (of this generator's schema) with a column {@link #PLANTED_SCORE}: the planted model's probability. */
  public Dataset<Row> withPlantedScore(Dataset<Row> rows) {
    int numericAt = rows.schema().fieldIndex("I1");
    int idsAt = rows.schema().fieldIndex("C1");
    StructType out = rows.schema().add(PLANTED_SCORE, DataTypes.DoubleType, false);
    return rows.mapPartitions(scorer(model, numericAt, idsAt), Encoders.row(out));
  }

  /** Rows drawn for their indices (static: the task carries the model, not this generator). */
  private static MapPartitionsFunction<Long, Row> drawer(PlantedClickModel m) {
    return indices -> new Iterator<>() {
      private final PlantedClickModel.Row row = new PlantedClickModel.Row(m);

      @Override
      public boolean hasNext() {
        return indices.hasNext();
      }

      @Override
      public Row next() {
        m.draw(indices.next(), row);
        Object[] values = new Object[1 + m.numeric + m.cardinalities.length];
        values[0] = row.click ? 1.0 : 0.0;
        for (int j = 0; j < m.numeric; j++) {
          values[1 + j] = row.numbers[j];
        }
        for (int f = 0; f < m.cardinalities.length; f++) {
          values[1 + m.numeric + f] = row.present[f] ? row.ids[f] : null;
        }
        return RowFactory.create(values);
      }
    };
  }

  /** Rows with the planted probability appended (static, as {@link #drawer}). */
  private static MapPartitionsFunction<Row, Row> scorer(PlantedClickModel m, int numericAt, int idsAt) {
    return in -> new Iterator<>() {
      private final PlantedClickModel.Row row = new PlantedClickModel.Row(m);

      @Override
      public boolean hasNext() {
        return in.hasNext();
      }

      @Override
      public Row next() {
        Row r = in.next();
        for (int j = 0; j < m.numeric; j++) {
          row.numbers[j] = r.getDouble(numericAt + j);
        }
        for (int f = 0; f < m.cardinalities.length; f++) {
          row.present[f] = !r.isNullAt(idsAt + f);
          row.ids[f] = row.present[f] ? r.getLong(idsAt + f) : 0;
        }
        Object[] values = new Object[r.length() + 1];
        for (int i = 0; i < r.length(); i++) {
          values[i] = r.get(i);
        }
        values[r.length()] = 1 / (1 + Math.exp(-m.logit(row)));
        return RowFactory.create(values);
      }
    };
  }

  /** The planted model's area under the ROC curve on {@code rows}: the best a trained model can expect there. */
  public double plantedAuc(Dataset<Row> rows) {
    return new BinaryClassificationEvaluator().setLabelCol(LABEL).setRawPredictionCol(PLANTED_SCORE)
        .setMetricName("areaUnderROC").setNumBins(0).evaluate(withPlantedScore(rows));
  }

  /** Builds a {@link ClickThroughData}; every option has Criteo Kaggle's shape as its default. */
  public static final class Builder {
    private long seed = 1;
    private long[] cardinalities = CRITEO_KAGGLE_CARDINALITIES.stream().mapToLong(Long::longValue).toArray();
    private double[] missingRates;
    private int numeric = CRITEO_NUMERIC_FIELDS;
    private double zipfExponent = 1.05;
    private int signalIds = 2_000;
    private double clickRate = 0.25;

    private Builder() {}

    /** The seed of the ids, the planted model and the clicks (default 1). */
    public Builder optSeed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Each categorical field's number of distinct ids (default Criteo Kaggle's, {@link #CRITEO_KAGGLE_CARDINALITIES}). */
    public Builder optCardinalities(List<Long> cardinalities) {
      this.cardinalities = cardinalities.stream().mapToLong(Long::longValue).toArray();
      return this;
    }

    /**
     * Criteo Kaggle's cardinalities times {@code factor} (at least 2 ids a field), e.g. 0.01 for
     * 338,000 ids in all.
     */
    public Builder optScale(double factor) {
      if (!(factor > 0 && factor <= 1)) {
        throw new IllegalArgumentException("scale must be in (0, 1], got " + factor);
      }
      this.cardinalities = CRITEO_KAGGLE_CARDINALITIES.stream()
          .mapToLong(c -> Math.max(2, Math.round(c * factor))).toArray();
      return this;
    }

    /** The share of rows whose value is missing (null), per categorical field (default 0 for each). */
    public Builder optMissingRates(List<Double> rates) {
      this.missingRates = rates.stream().mapToDouble(Double::doubleValue).toArray();
      return this;
    }

    /** The number of numeric columns (default 13). */
    public Builder optNumericFields(int numeric) {
      this.numeric = numeric;
      return this;
    }

    /** The exponent s of the ids' Zipf law, P(rank r) proportional to r^-s (default 1.05). */
    public Builder optZipfExponent(double exponent) {
      this.zipfExponent = exponent;
      return this;
    }

    /** How many of each field's most popular ids carry a planted weight (default 2,000); rarer ids weigh nothing. */
    public Builder optSignalIds(int ids) {
      this.signalIds = ids;
      return this;
    }

    /** The mean click probability (default 0.25, about Criteo Kaggle's share of clicks). */
    public Builder optClickRate(double rate) {
      this.clickRate = rate;
      return this;
    }

    /** Validates the options and builds the generator (calibrating the planted model's offset to the click rate). */
    public ClickThroughData build() {
      if (cardinalities.length == 0 || Arrays.stream(cardinalities).anyMatch(c -> c < 1)) {
        throw new IllegalArgumentException("cardinalities must be at least one field of at least 1 id each, got "
            + Arrays.toString(cardinalities));
      }
      double[] rates = missingRates == null ? new double[cardinalities.length] : missingRates;
      if (rates.length != cardinalities.length || Arrays.stream(rates).anyMatch(r -> !(r >= 0 && r < 1))) {
        throw new IllegalArgumentException("missingRates must be one rate in [0, 1) per categorical field ("
            + cardinalities.length + "), got " + Arrays.toString(rates));
      }
      if (numeric < 0 || !(zipfExponent > 0) || signalIds < 1 || !(clickRate > 0 && clickRate < 1)) {
        throw new IllegalArgumentException("numericFields must be >= 0, zipfExponent > 0, signalIds >= 1 and "
            + "clickRate in (0, 1), got " + numeric + ", " + zipfExponent + ", " + signalIds + ", " + clickRate);
      }
      return new ClickThroughData(new PlantedClickModel(seed, cardinalities, rates, numeric, zipfExponent, signalIds,
          PlantedClickModel.LINEAR_SCALE, PlantedClickModel.FACTOR_SCALE, PlantedClickModel.NUMERIC_SCALE, clickRate));
    }
  }
}
