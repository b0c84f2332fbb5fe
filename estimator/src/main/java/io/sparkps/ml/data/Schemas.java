package io.sparkps.ml.data;

import io.sparkps.ml.data.LabelKind;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructType;

/** Schema checks and the output schema shared by the estimator and the model. */
public final class Schemas {
  /**
   * The output columns of a model: a classifier adds prediction (class index), probability and
   * raw output; a regressor adds prediction (a number for one output, a vector for several).
   */
  public record Outputs(boolean classification, long units, String predictionCol, String probabilityCol,
      String rawPredictionCol) {}

  private Schemas() {}

  public static void requireColumn(StructType schema, String col, String role) {
    if (!Arrays.asList(schema.fieldNames()).contains(col)) {
      throw new IllegalArgumentException("the " + role + " column '" + col + "' is not in the DataFrame (columns: "
          + Arrays.toString(schema.fieldNames()) + "): set " + role + "Col to one of them");
    }
  }

  private static boolean isVector(DataType type) {
    return type.equals(SQLDataTypes.VectorType()) || (type instanceof ArrayType a && a.elementType() instanceof NumericType);
  }

  /** How {@code labelCol} holds the targets of a network with {@code units} outputs, or why it cannot. */
  public static LabelKind labelKind(StructType schema, String labelCol, boolean classification, long units) {
    requireColumn(schema, labelCol, "label");
    DataType type = schema.apply(labelCol).dataType();
    if (type instanceof NumericType) {
      if (classification) {
        return LabelKind.CLASS_INDEX;
      }
      if (units != 1) {
        throw new IllegalArgumentException("the label column '" + labelCol + "' holds one number per row but the "
            + "network's output layer has " + units + " units: give a vector of " + units + " values per row "
            + "(a VectorAssembler) or set the output layer's nOut to 1");
      }
      return LabelKind.VALUES;
    }
    if (isVector(type)) {
      return classification ? LabelKind.ONE_HOT : LabelKind.VALUES;
    }
    throw new IllegalArgumentException("the label column '" + labelCol + "' is " + type.simpleString() + "; it must be "
        + (classification ? "a class index (use a StringIndexer for strings) or a one-hot vector"
            : "a number or a vector of numbers (regression, from the output layer's loss)"));
  }

  public static StructType withPredictions(StructType schema, String featuresCol, Outputs outputs) {
    requireColumn(schema, featuresCol, "features");
    DataType type = schema.apply(featuresCol).dataType();
    if (!isVector(type)) {
      throw new IllegalArgumentException("the features column '" + featuresCol + "' is " + type.simpleString()
          + "; it must be an ml.linalg.Vector or an array of numbers (assemble numeric columns with a VectorAssembler)");
    }
    return addOutputs(schema, outputs);
  }

  /** {@code schema} with the output columns added (none of which may exist). */
  public static StructType addOutputs(StructType schema, Outputs outputs) {
    List<String> added = outputs.classification()
        ? List.of(outputs.predictionCol(), outputs.probabilityCol(), outputs.rawPredictionCol())
        : List.of(outputs.predictionCol());
    for (String out : added) {
      if (Arrays.asList(schema.fieldNames()).contains(out)) {
        throw new IllegalArgumentException("the output column '" + out + "' exists already: choose another name");
      }
    }
    if (!outputs.classification()) {
      return schema.add(outputs.predictionCol(), outputs.units() == 1 ? DataTypes.DoubleType : SQLDataTypes.VectorType(),
          false);
    }
    return schema.add(outputs.predictionCol(), DataTypes.DoubleType, false)
        .add(outputs.probabilityCol(), SQLDataTypes.VectorType(), false)
        .add(outputs.rawPredictionCol(), SQLDataTypes.VectorType(), false);
  }
}
