package io.sparkps.ps.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A client thread waiting for a call ends when interrupted (a closing client), not at the call's deadline. */
class ShardStubAwaitTest {
  @Test
  void await_interrupted_cancelsTheCallAndEndsTheWait() throws Exception {
    CompletableFuture<String> neverAnswered = new CompletableFuture<>();
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    Thread waiter = new Thread(() -> {
      try {
        ShardStub.await(neverAnswered, Duration.ofMinutes(10));
        outcome.complete(null);
      } catch (Throwable t) {
        outcome.complete(t);
      }
    }, "test-waiter");
    waiter.start();
    Thread.sleep(200);
    long t0 = System.nanoTime();
    waiter.interrupt();
    Throwable t = outcome.get(5, TimeUnit.SECONDS);
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "ended at the interrupt");
    CompletionException e = assertInstanceOf(CompletionException.class, t);
    assertEquals(Status.Code.CANCELLED, Status.fromThrowable(e.getCause()).getCode());
    assertTrue(neverAnswered.isCancelled(), "the call was cancelled");
  }

  @Test
  void await_failedCall_throwsItsStatusAsJoinWould() {
    CompletableFuture<String> failed = CompletableFuture.failedFuture(Status.UNAVAILABLE.asRuntimeException());
    CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
        () -> ShardStub.await(failed, Duration.ofSeconds(1)));
    assertEquals(Status.Code.UNAVAILABLE, Status.fromThrowable(e.getCause()).getCode());
  }
}
