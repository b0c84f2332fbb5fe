package io.sparkps.ps;

import java.util.Iterator;
import java.util.ServiceLoader;

/** The {@link PsProvider} on the class path, looked up on first use by the class loader that loaded the API. */
final class Providers {
  private static volatile PsProvider found;

  private Providers() {}

  static PsProvider get() {
    PsProvider p = found;
    if (p == null) {
      synchronized (Providers.class) {
        if (found == null) {
          found = find(ServiceLoader.load(PsProvider.class, PsProvider.class.getClassLoader()).iterator());
        }
        p = found;
      }
    }
    return p;
  }

  /** The one provider {@code candidates} hold; fails, naming the fix, when there is none or more than one. */
  static PsProvider find(Iterator<PsProvider> candidates) {
    if (!candidates.hasNext()) {
      throw new IllegalStateException("no implementation of the SparkPS parameter server is on the class path "
          + "(no META-INF/services/" + PsProvider.class.getName() + " entry): add ps-server's jar, or the "
          + "estimator's shaded jar, not only the API's classes; a shaded jar must merge META-INF/services");
    }
    PsProvider first = candidates.next();
    if (candidates.hasNext()) {
      throw new IllegalStateException("two implementations of the SparkPS parameter server are on the class path, "
          + first.getClass().getName() + " and " + candidates.next().getClass().getName() + ": keep one ps-server jar");
    }
    return first;
  }
}
