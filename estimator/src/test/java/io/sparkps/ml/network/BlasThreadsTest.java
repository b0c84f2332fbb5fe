package io.sparkps.ml.network;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.factory.Nd4j;

/** ND4J's OpenBLAS threads follow a task's cores unless the environment chose them (the real OpenBLAS of this JVM). */
class BlasThreadsTest {
  private final Blas blas = Nd4j.factory().blas();
  private int before;

  @BeforeEach
  void remember() {
    before = blas.getMaxThreads();
    BlasThreads.reset();
    blas.setMaxThreads(3);
  }

  @AfterEach
  void restore() {
    blas.setMaxThreads(before);
    BlasThreads.reset();
  }

  @Test
  void withoutTheEnvironmentsChoice_aWorkerSetsItsCores_andSaysFromWhat() {
    Optional<String> line = BlasThreads.fit(1, true, Map.of(), blas);
    assertEquals(1, blas.getMaxThreads());
    assertTrue(line.orElseThrow().contains("computes with 1 thread, the task's cores, instead of 3"), line.get());
    assertTrue(line.get().contains("spark.executorEnv.OMP_NUM_THREADS=1"), line.get());
    assertEquals(Optional.empty(), BlasThreads.fit(1, true, Map.of(), blas), "nothing to change, nothing said");
  }

  @Test
  void eitherEnvironmentVariable_leavesTheThreadsAsTheyAre() {
    assertEquals(Optional.empty(), BlasThreads.fit(1, true, Map.of("OMP_NUM_THREADS", "3"), blas));
    assertEquals(Optional.empty(), BlasThreads.fit(1, true, Map.of("OPENBLAS_NUM_THREADS", "3"), blas));
    assertEquals(3, blas.getMaxThreads());
  }

  @Test
  void aWorkersCoresWin_overAnEvaluatorsOrAScoringTasks() {
    BlasThreads.fit(1, false, Map.of(), blas);
    assertEquals(1, blas.getMaxThreads(), "no worker yet: the evaluator's cores");
    BlasThreads.fit(2, true, Map.of(), blas);
    assertEquals(2, blas.getMaxThreads(), "a worker's cores replace the evaluator's");
    assertEquals(Optional.empty(), BlasThreads.fit(1, false, Map.of(), blas));
    assertEquals(2, blas.getMaxThreads(), "an evaluator after a worker leaves the worker's");
  }
}
