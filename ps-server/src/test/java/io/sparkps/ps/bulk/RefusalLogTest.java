package io.sparkps.ps.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A flood of refusals of one kind makes one line per interval, the next one counting those left out. */
class RefusalLogTest {
  @Test
  void oneLinePerKindAndInterval_theNextCountsTheRefusalsLeftOut() {
    AtomicLong now = new AtomicLong(1_000);
    RefusalLog log = new RefusalLog(now::get);
    assertEquals(0, log.admit("token"), "the first refusal of a kind is logged");
    assertEquals(0, log.admit("full"), "another kind has its own interval");
    now.addAndGet(RefusalLog.INTERVAL.toNanos() - 1);
    assertEquals(-1, log.admit("token"));
    assertEquals(-1, log.admit("token"));
    assertEquals(-1, log.admit("full"));
    now.addAndGet(1);
    assertEquals(2, log.admit("token"), "a whole interval later: logged, with the two left out");
    assertEquals(1, log.admit("full"));
    assertEquals(-1, log.admit("token"));
    now.addAndGet(RefusalLog.INTERVAL.toNanos());
    assertEquals(1, log.admit("token"));
    assertEquals(" (3 more refused alike since the last such line, not logged)", RefusalLog.since(3));
    assertEquals("", RefusalLog.since(0));
  }
}
