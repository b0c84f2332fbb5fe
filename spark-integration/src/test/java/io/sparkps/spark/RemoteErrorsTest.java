package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A task's exception crosses to the driver whole: class, message, stack, cause and what it suppressed. */
class RemoteErrorsTest {
  @Test
  void causesAndSuppressedExceptions_crossToTheDriver() {
    IllegalStateException root = new IllegalStateException("the disk is full");
    RuntimeException failure = new RuntimeException("pull failed", root);
    failure.addSuppressed(new java.util.concurrent.TimeoutException("no replacement of ps 0 within 9 s"));
    failure.addSuppressed(failure.getCause()); // seen already: not repeated
    RemoteException back = RemoteErrors.fromProto(io.sparkps.spark.coord.WireErrors.toProto(failure));
    assertEquals("java.lang.RuntimeException: pull failed", back.getMessage());
    assertEquals("java.lang.IllegalStateException: the disk is full", back.getCause().getMessage());
    assertEquals(1, back.getSuppressed().length, java.util.Arrays.toString(back.getSuppressed()));
    assertEquals("java.util.concurrent.TimeoutException: no replacement of ps 0 within 9 s",
        back.getSuppressed()[0].getMessage());
    assertTrue(back.getStackTrace().length > 0 && back.getStackTrace()[0].getMethodName()
        .equals("causesAndSuppressedExceptions_crossToTheDriver"), java.util.Arrays.toString(back.getStackTrace()));
    java.io.StringWriter printed = new java.io.StringWriter();
    back.printStackTrace(new java.io.PrintWriter(printed));
    assertTrue(printed.toString().contains("Suppressed: java.util.concurrent.TimeoutException: no replacement"),
        printed.toString());
  }
}
