package io.sparkps.spark.coord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Role;
import java.util.List;
import org.junit.jupiter.api.Test;

class HistoryTest {
  private static Member step(Role role, long step) {
    return new Member(role, 0, "h", 0, 0, "e", Progress.newBuilder().setStep(step).putMetrics("loss", step).build(),
        0, -1, -1, false);
  }

  @Test
  void pastItsCapacity_itThinsTheOlderWorkerSteps_keepsTheEvaluatorsReports_andReadersFollowByNumber() {
    History h = new History(8);
    h.add(step(Role.EVALUATOR, 0));
    for (int s = 1; s <= 20; s++) {
      h.add(step(Role.CHIEF, s));
    }
    List<Member> all = h.all();
    assertTrue(all.size() <= 8, "held " + all.size());
    assertEquals(Role.EVALUATOR, all.get(0).role());
    assertEquals(21 - all.size(), h.thinned());
    // the newest steps are all there, in order
    List<Long> steps = all.stream().skip(1).map(m -> m.progress().getStep()).toList();
    assertEquals(20L, steps.get(steps.size() - 1));
    assertEquals(19L, steps.get(steps.size() - 2));
    for (int i = 1; i < steps.size(); i++) {
      assertTrue(steps.get(i) > steps.get(i - 1), steps.toString());
    }
    // a reader that has seen up to number 17 (step 17) gets steps 18, 19, 20 next
    assertEquals(List.of(18L, 19L, 20L), h.since(18).stream().map(e -> e.member().progress().getStep()).toList());
    assertEquals(21, h.nextSeq());
  }
}
