package io.sparkps.ml;

import java.util.Arrays;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructType;

/** Schema checks and the output schema shared by the estimator and the model. */
final class Schemas {
  private Schemas() {}

  static void requireColumn(StructType schema, String col, String role) {
    if (!Arrays.asList(schema.fieldNames()).contains(col)) {
      throw new IllegalArgumentException("the " + role + " column '" + col + "' is not in the DataFrame (columns: "
          + Arrays.toString(schema.fieldNames()) + "): set " + role + "Col to one of them");
    }
  }

  static StructType withPredictions(StructType schema, String featuresCol, String predictionCol, String probabilityCol) {
    requireColumn(schema, featuresCol, "features");
    DataType type = schema.apply(featuresCol).dataType();
    boolean ok = type.equals(SQLDataTypes.VectorType())
        || (type instanceof ArrayType a && a.elementType() instanceof NumericType);
    if (!ok) {
      throw new IllegalArgumentException("the features column '" + featuresCol + "' is " + type.simpleString()
          + "; it must be an ml.linalg.Vector or an array of numbers (assemble numeric columns with a VectorAssembler)");
    }
    for (String out : new String[] {predictionCol, probabilityCol}) {
      if (Arrays.asList(schema.fieldNames()).contains(out)) {
        throw new IllegalArgumentException("the output column '" + out + "' exists already: choose another name");
      }
    }
    return schema.add(predictionCol, DataTypes.DoubleType, false).add(probabilityCol, SQLDataTypes.VectorType(), false);
  }
}
