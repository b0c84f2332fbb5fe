package io.sparkps.ml.datasets;

import java.util.SplittableRandom;

/**
 * The model that generated click-through rows come from, and the sampler of those rows: Zipf-distributed
 * ids per categorical field, count-like numeric fields, and a click drawn from a logistic model with a
 * weight per popular id, a factorization term between the fields' planted vectors and a weight per
 * numeric field. Nothing is stored: a weight is a hash of (seed, field, id), so a field of ten million
 * ids costs no memory, and row {@code i} is the same whatever partition or machine draws it.
 *
 * <p>Only the {@code signalIds} most popular ids of a field carry a weight; rarer ids and missing
 * values weigh nothing, so that a model trained on enough rows can reach the planted model's AUC
 * (an id seen once carries no learnable signal, in real logs as here).
 */
final class PlantedClickModel implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /** Dimension of the planted factorization vectors. */
  static final int FACTORS = 4;
  /**
   * Standard deviations of a popular id's weight, of a factor's entries and of a numeric field's
   * weight: with Criteo's shape they give a planted AUC of about 0.80, as Criteo's best models reach.
   */
  static final double LINEAR_SCALE = 0.2;
  static final double FACTOR_SCALE = 0.15;
  static final double NUMERIC_SCALE = 0.15;
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  final long seed;
  final long[] cardinalities;
  final double[] missingRates;
  final int numeric;
  final double zipfExponent;
  final int signalIds;
  final double linearScale;
  final double factorScale;
  final double numericScale;
  final double bias;

  PlantedClickModel(long seed, long[] cardinalities, double[] missingRates, int numeric, double zipfExponent,
      int signalIds, double linearScale, double factorScale, double numericScale, double clickRate) {
    this.seed = seed;
    this.cardinalities = cardinalities.clone();
    this.missingRates = missingRates.clone();
    this.numeric = numeric;
    this.zipfExponent = zipfExponent;
    this.signalIds = signalIds;
    this.linearScale = linearScale;
    this.factorScale = factorScale;
    this.numericScale = numericScale;
    this.bias = calibratedBias(clickRate);
  }

  /** One generated row: numeric values, ids (valid where {@code present}), the planted logit and the click. */
  static final class Row {
    final double[] numbers;
    final long[] ids;
    final boolean[] present;
    double logit;
    boolean click;

    Row(PlantedClickModel model) {
      numbers = new double[model.numeric];
      ids = new long[model.cardinalities.length];
      present = new boolean[model.cardinalities.length];
    }
  }

  /** Draws row {@code index} of the stream into {@code row}: the same index always gives the same row. */
  void draw(long index, Row row) {
    SplittableRandom random = new SplittableRandom(mix(seed ^ mix(index + GOLDEN)));
    drawFeatures(random, row);
    row.logit = logit(row, bias);
    row.click = random.nextDouble() < 1 / (1 + Math.exp(-row.logit));
  }

  private void drawFeatures(SplittableRandom random, Row row) {
    for (int j = 0; j < numeric; j++) {
      // Count-like, as Criteo's integer fields: log-normal, floored, field j a little wider than j - 1.
      row.numbers[j] = Math.floor(Math.exp(0.5 + 0.15 * j + random.nextGaussian()));
    }
    for (int f = 0; f < cardinalities.length; f++) {
      row.present[f] = random.nextDouble() >= missingRates[f];
      long rank = zipfRank(cardinalities[f], random.nextDouble());
      row.ids[f] = row.present[f] ? idOf(f, rank) : 0;
    }
  }

  /** The planted logit of a row's features (its numbers, and its ids where present; its click is not read). */
  double logit(Row row) {
    return logit(row, bias);
  }

  private double logit(Row row, double offset) {
    double z = offset;
    for (int j = 0; j < numeric; j++) {
      double standardized = (Math.log1p(row.numbers[j]) - (0.75 + 0.15 * j)) / 0.9;
      z += numericScale * gaussian(mix(seed + 7 * GOLDEN + j)) * standardized;
    }
    double[] sum = new double[FACTORS];
    double squares = 0;
    for (int f = 0; f < cardinalities.length; f++) {
      long rank = row.present[f] ? rankOf(f, row.ids[f]) : 0;
      if (rank < 1 || rank > Math.min(signalIds, cardinalities[f])) {
        continue; // missing, rare, or not an id of this field: no weight (the default row's meaning)
      }
      long key = mix(seed ^ mix(row.ids[f] + f * GOLDEN));
      z += linearScale * gaussian(key);
      for (int k = 0; k < FACTORS; k++) {
        double v = factorScale * gaussian(mix(key + (k + 1) * GOLDEN));
        sum[k] += v;
        squares += v * v;
      }
    }
    // Sum over field pairs of <v_f, v_g>, by the factorization machine's identity.
    double pairs = 0;
    for (int k = 0; k < FACTORS; k++) {
      pairs += sum[k] * sum[k];
    }
    return z + 0.5 * (pairs - squares);
  }

  /** The id of field {@code f}'s rank {@code rank} (1 is its most popular): distinct ranks, distinct ids. */
  long idOf(int f, long rank) {
    // mix is a bijection of the 64-bit integers: within a field, no two ranks share an id.
    return mix(rank + f * GOLDEN + seed);
  }

  /** The rank of an id of field {@code f}: the inverse of {@link #idOf}. */
  long rankOf(int f, long id) {
    return unmix(id) - f * GOLDEN - seed;
  }

  /**
   * A rank in [1, n] drawn with probability proportional to rank^-s from the uniform {@code u}, by
   * inverting the continuous power law on [1, n + 1) (a close approximation of Zipf's law for the
   * large n of id fields, exact in its tail exponent).
   */
  long zipfRank(long n, double u) {
    double s = zipfExponent;
    double x = Math.abs(s - 1) < 1e-9 ? Math.pow(n + 1.0, u)
        : Math.pow(1 + u * (Math.pow(n + 1.0, 1 - s) - 1), 1 / (1 - s));
    return Math.max(1, Math.min(n, (long) x));
  }

  /** The offset that makes the mean click probability {@code rate}, found on 8,192 rows of this model. */
  private double calibratedBias(double rate) {
    int n = 8192;
    double[] logits = new double[n];
    Row row = new Row(this);
    for (int i = 0; i < n; i++) {
      // A stream of its own (negative indices), not the rows users draw.
      drawFeatures(new SplittableRandom(mix(seed ^ mix(-1 - i + GOLDEN))), row);
      logits[i] = logit(row, 0);
    }
    double lo = -30;
    double hi = 30;
    for (int step = 0; step < 60; step++) {
      double mid = (lo + hi) / 2;
      double mean = 0;
      for (double z : logits) {
        mean += 1 / (1 + Math.exp(-(z + mid)));
      }
      if (mean / n < rate) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return (lo + hi) / 2;
  }

  /** A standard normal value from a hash (Box-Muller on two uniforms taken from it). */
  private static double gaussian(long hash) {
    double u1 = ((hash >>> 11) + 1.0) / (1L << 53);
    double u2 = (mix(hash) >>> 11) / (double) (1L << 53);
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** SplitMix64's finalizer: a bijection of the longs that scatters nearby inputs. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** The inverse of {@link #mix}. */
  static long unmix(long z) {
    z = z ^ (z >>> 31) ^ (z >>> 62);
    z *= 0x319642B2D24D8EC3L; // inverse of 0x94D049BB133111EB modulo 2^64
    z = z ^ (z >>> 27) ^ (z >>> 54);
    z *= 0x96DE1B173F119089L; // inverse of 0xBF58476D1CE4E5B9 modulo 2^64
    return z ^ (z >>> 30) ^ (z >>> 60);
  }
}
