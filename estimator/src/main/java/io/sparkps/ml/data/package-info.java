/** Reading training data: IDX files (MNIST, Fashion-MNIST) into arrays and DataFrames. */
package io.sparkps.ml.data;
