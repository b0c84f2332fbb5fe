/** Runnable examples of the parameter server on its own, without Spark. */
package io.sparkps.ps.example;
