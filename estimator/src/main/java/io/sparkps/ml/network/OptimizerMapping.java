package io.sparkps.ml.network;

import io.sparkps.ps.spec.LearningRateSchedule;
import io.sparkps.ps.spec.OptimizerConfig;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.nd4j.linalg.learning.config.AdaGrad;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.learning.config.RmsProp;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.L1Regularization;
import org.nd4j.linalg.learning.regularization.L2Regularization;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.linalg.learning.regularization.WeightDecay;
import org.nd4j.linalg.schedule.ExponentialSchedule;
import org.nd4j.linalg.schedule.FixedSchedule;
import org.nd4j.linalg.schedule.ISchedule;
import org.nd4j.linalg.schedule.InverseSchedule;
import org.nd4j.linalg.schedule.MapSchedule;
import org.nd4j.linalg.schedule.PolySchedule;
import org.nd4j.linalg.schedule.ScheduleType;
import org.nd4j.linalg.schedule.SigmoidSchedule;
import org.nd4j.linalg.schedule.StepSchedule;

/**
 * Turns a DL4J layer's updater and regularization for one parameter into the optimizer a
 * parameter server applies, with the same formulas (see the ps-server equivalence tests).
 */
public final class OptimizerMapping {
  private OptimizerMapping() {}

  /** The server-side optimizer for {@code updater} plus {@code regularization}; names {@code param} on failure. */
  public static OptimizerConfig of(String param, IUpdater updater, List<Regularization> regularization) {
    OptimizerConfig base = base(param, updater);
    ISchedule schedule = schedule(updater);
    if (schedule != null) {
      base = base.withLearningRate(schedule(param, schedule));
    } else if (!(updater instanceof NoOp) && !Double.isFinite(base.learningRate().initial())) {
      // DL4J 1.0.0-M2.1's AdaGrad.clone() drops its schedule, and every layer gets a clone: the
      // layer is left with the NaN rate, which MultiLayerNetwork.fit would train to NaN as well.
      throw new IllegalArgumentException("parameter '" + param + "' has the learning rate "
          + base.learningRate().initial() + " and no learning-rate schedule in its "
          + updater.getClass().getSimpleName() + " (DL4J drops a schedule given to AdaGrad when it copies the "
          + "updater into each layer, and MultiLayerNetwork.fit would train this to NaN too): give the updater a "
          + "fixed learning rate, or use a schedule with Sgd, Adam, Nesterovs or RmsProp");
    }
    for (Regularization r : regularization == null ? List.<Regularization>of() : regularization) {
      base = regularize(param, base, r);
    }
    return base;
  }

  private static OptimizerConfig base(String param, IUpdater u) {
    if (u instanceof Sgd s) {
      return OptimizerConfig.sgd(s.getLearningRate());
    } else if (u instanceof Adam a) {
      return OptimizerConfig.adam(a.getLearningRate(), a.getBeta1(), a.getBeta2(), a.getEpsilon());
    } else if (u instanceof Nesterovs n) {
      if (n.getMomentumISchedule() != null) {
        throw unsupported(param, "a momentum schedule");
      }
      return OptimizerConfig.nesterov(n.getLearningRate(), n.getMomentum());
    } else if (u instanceof AdaGrad g) {
      return OptimizerConfig.adaGrad(g.getLearningRate(), g.getEpsilon());
    } else if (u instanceof RmsProp r) {
      return OptimizerConfig.rmsProp(r.getLearningRate(), r.getRmsDecay(), r.getEpsilon());
    } else if (u instanceof NoOp) {
      return OptimizerConfig.noOp();
    }
    throw unsupported(param, "the updater " + u.getClass().getSimpleName());
  }

  private static ISchedule schedule(IUpdater u) {
    if (u instanceof Sgd s) {
      return s.getLearningRateSchedule();
    } else if (u instanceof Adam a) {
      return a.getLearningRateSchedule();
    } else if (u instanceof Nesterovs n) {
      return n.getLearningRateSchedule();
    } else if (u instanceof AdaGrad g) {
      return g.getLearningRateSchedule();
    } else if (u instanceof RmsProp r) {
      return r.getLearningRateSchedule();
    }
    return null;
  }

  private static LearningRateSchedule schedule(String param, ISchedule s) {
    if (s instanceof ExponentialSchedule e) {
      requireIterations(param, e.getScheduleType());
      return LearningRateSchedule.exponential(e.getInitialValue(), e.getGamma());
    } else if (s instanceof StepSchedule st) {
      requireIterations(param, st.getScheduleType());
      return LearningRateSchedule.step(st.getInitialValue(), st.getDecayRate(), st.getStep());
    } else if (s instanceof InverseSchedule i) {
      requireIterations(param, i.getScheduleType());
      return LearningRateSchedule.inverse(i.getInitialValue(), i.getGamma(), i.getPower());
    } else if (s instanceof PolySchedule p) {
      requireIterations(param, p.getScheduleType());
      return LearningRateSchedule.poly(p.getInitialValue(), p.getPower(), p.getMaxIter());
    } else if (s instanceof SigmoidSchedule sg) {
      requireIterations(param, sg.getScheduleType());
      return LearningRateSchedule.sigmoid(sg.getInitialValue(), sg.getGamma(), sg.getStepSize());
    } else if (s instanceof MapSchedule m) {
      requireIterations(param, m.getScheduleType());
      Map<Long, Double> values = new TreeMap<>();
      m.getValues().forEach((k, v) -> values.put(k.longValue(), v));
      return LearningRateSchedule.map(values);
    }
    throw unsupported(param, "the learning-rate schedule " + s.getClass().getSimpleName());
  }

  private static void requireIterations(String param, ScheduleType type) {
    if (type != ScheduleType.ITERATION) {
      throw unsupported(param, "a learning-rate schedule by " + type + " (use ScheduleType.ITERATION)");
    }
  }

  private static OptimizerConfig regularize(String param, OptimizerConfig c, Regularization r) {
    ISchedule coefficient = r instanceof L2Regularization l2 ? l2.getL2()
        : r instanceof L1Regularization l1 ? l1.getL1() : r instanceof WeightDecay wd ? wd.getCoeff() : null;
    if (coefficient != null && !(coefficient instanceof FixedSchedule)) {
      throw unsupported(param, "a scheduled " + r.getClass().getSimpleName() + " coefficient");
    }
    // A regularization listed twice is applied twice by DL4J, so the coefficients add up. (DL4J
    // 1.0.0-M2.1 lists the builder's weightDecay twice for each weight.)
    if (r instanceof L2Regularization l2) {
      return c.withL2(c.l2() + l2.getL2().valueAt(0, 0));
    } else if (r instanceof L1Regularization l1) {
      return c.withL1(c.l1() + l1.getL1().valueAt(0, 0));
    } else if (r instanceof WeightDecay wd) {
      if (c.weightDecay() != 0 && c.weightDecayAppliesLr() != wd.isApplyLR()) {
        throw unsupported(param, "weight decay both with and without the learning rate applied");
      }
      return c.withWeightDecay(c.weightDecay() + wd.getCoeff().valueAt(0, 0), wd.isApplyLR());
    }
    throw unsupported(param, "the regularization " + r.getClass().getSimpleName());
  }

  private static IllegalArgumentException unsupported(String param, String what) {
    return new IllegalArgumentException("parameter '" + param + "' uses " + what + ", which SparkPS cannot apply on "
        + "its parameter servers yet; supported: Sgd, Adam, Nesterovs, AdaGrad, RmsProp, NoOp with iteration "
        + "schedules, and L1, L2, WeightDecay");
  }
}
