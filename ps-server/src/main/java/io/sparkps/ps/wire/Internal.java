package io.sparkps.ps.wire;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Not part of SparkPS's public API, though public: SparkPS's own packages and modules (the Spark
 * integration, the estimator) use it, users do not. It may change or go in any release. Every
 * public class of the parameter server's internal packages carries it, and so do the few public
 * classes and members of {@code io.sparkps.ps} that only the Spark integration calls; no public
 * signature of the API names a class that carries it ({@code ApiSurfaceTest}).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface Internal {}
