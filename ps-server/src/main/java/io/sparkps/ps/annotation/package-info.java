/**
 * What marks a public class or member as not part of SparkPS's API ({@link
 * io.sparkps.ps.annotation.Internal}); the lowest layer, so that the API's packages may use it too.
 */
package io.sparkps.ps.annotation;
