/**
 * What the {@code sparkps} Python package calls through Py4J: a fit's handle read in one call per
 * poll ({@link io.sparkps.ml.python.PythonJob}) and a failure described as data
 * ({@link io.sparkps.ml.python.PythonErrors}), so that Python shows and raises and decides nothing
 * the JVM side already does. Not for JVM users: use {@link io.sparkps.ml.FitJob}.
 */
package io.sparkps.ml.python;
