/**
 * Data sets generated on demand, for tests, benchmarks and notebooks on machines that reach no
 * data host: {@link io.sparkps.ml.datasets.ClickThroughData}, click-through rows of Criteo's shape
 * drawn from a planted model whose AUC is known.
 */
package io.sparkps.ml.datasets;
