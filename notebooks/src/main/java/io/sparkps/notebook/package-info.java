/**
 * The Java (SparkPS) Jupyter kernel: JShell cells in a JVM with Spark and SparkPS, rich displays
 * ({@code Dataset} tables, charts, live progress), interrupts that cancel runs and jobs, and the
 * installer of its kernelspec. {@link io.sparkps.notebook.Notebook} is what cells use; the other
 * public types are entry points.
 */
package io.sparkps.notebook;
