package io.sparkps.ps.spec;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.Objects;

/**
 * The shared secret of one training run: every call to a parameter server carries it.
 *
 * <p>{@link #toString()} never shows the value, so a token can be logged or put in an exception
 * message by mistake without leaking.
 */
public final class PsToken implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final String secret;

  private PsToken(String secret) {
    this.secret = secret;
  }

  /** A fresh random token (256 bits). */
  public static PsToken generate() {
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return new PsToken(Base64.getUrlEncoder().withoutPadding().encodeToString(bytes));
  }

  /** A token with a given value, e.g. one handed to a separate process through its environment. */
  public static PsToken of(String secret) {
    Objects.requireNonNull(secret, "token");
    if (secret.isBlank()) {
      throw new IllegalArgumentException("token must not be blank");
    }
    return new PsToken(secret);
  }

  /** The secret itself, for handing to a process that must join the run. Never log it. */
  public String secret() {
    return secret;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PsToken other && other.secret.equals(secret);
  }

  @Override
  public int hashCode() {
    return secret.hashCode();
  }

  @Override
  public String toString() {
    return "PsToken(redacted)";
  }
}
