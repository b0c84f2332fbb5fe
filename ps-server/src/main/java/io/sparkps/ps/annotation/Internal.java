package io.sparkps.ps.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Not part of SparkPS's public API, though public: SparkPS's own packages and modules (the Spark
 * integration, the estimator) use it, users do not. It may change or go in any release. Every
 * public class of the parameter server's internal packages carries it, and so do the few public
 * members of the API's classes that only SparkPS's own packages call (the TLS contexts and
 * handshakes a {@code PsTls} makes for them); no public signature of the API names a class that
 * carries it, or a gRPC or Netty type, unless it carries it itself ({@code ApiSurfaceTest}).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface Internal {}
