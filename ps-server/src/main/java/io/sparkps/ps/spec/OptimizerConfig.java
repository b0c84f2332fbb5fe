package io.sparkps.ps.spec;

import java.util.Objects;

/**
 * How a parameter server turns a pushed gradient into an update of one variable.
 *
 * <p>The formulas and defaults are those of ND4J's updaters ({@code org.nd4j.linalg.learning}),
 * so a variable gets exactly the update DL4J would have applied in one process. Regularization
 * follows DL4J too: L1 and L2 are added to the gradient before the updater, weight decay to the
 * update after it. Instances are immutable; {@code withX} returns a changed copy.
 */
public final class OptimizerConfig implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final Optimizer kind;
  private final LearningRateSchedule learningRate;
  private final double momentum;
  private final double beta1;
  private final double beta2;
  private final double epsilon;
  private final double decay;
  private final double l1;
  private final double l2;
  private final double weightDecay;
  private final boolean weightDecayAppliesLr;

  private OptimizerConfig(Optimizer kind, LearningRateSchedule learningRate, double momentum,
      double beta1, double beta2, double epsilon, double decay, double l1, double l2,
      double weightDecay, boolean weightDecayAppliesLr) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.learningRate = Objects.requireNonNull(learningRate, "learningRate");
    this.momentum = momentum;
    this.beta1 = beta1;
    this.beta2 = beta2;
    this.epsilon = epsilon;
    this.decay = decay;
    this.l1 = nonNegative("l1", l1);
    this.l2 = nonNegative("l2", l2);
    this.weightDecay = nonNegative("weightDecay", weightDecay);
    this.weightDecayAppliesLr = weightDecayAppliesLr;
  }

  private static OptimizerConfig of(Optimizer kind, double lr, double momentum, double beta1,
      double beta2, double epsilon, double decay) {
    return new OptimizerConfig(kind, LearningRateSchedule.fixed(lr), momentum, beta1, beta2,
        epsilon, decay, 0, 0, 0, true);
  }

  /** Plain gradient descent: {@code w -= lr * g}. */
  public static OptimizerConfig sgd(double learningRate) {
    return of(Optimizer.SGD, learningRate, 0, 0, 0, 0, 0);
  }

  /** Classical momentum: {@code v = mu * v - lr * g; w += v}. */
  public static OptimizerConfig momentum(double learningRate, double momentum) {
    return of(Optimizer.MOMENTUM, learningRate, momentum, 0, 0, 0, 0);
  }

  /** Nesterov momentum as ND4J's {@code Nesterovs}. */
  public static OptimizerConfig nesterov(double learningRate, double momentum) {
    return of(Optimizer.NESTEROV, learningRate, momentum, 0, 0, 0, 0);
  }

  /** Adam with ND4J's defaults (beta1 0.9, beta2 0.999, epsilon 1e-8). */
  public static OptimizerConfig adam(double learningRate) {
    return adam(learningRate, 0.9, 0.999, 1e-8);
  }

  /** Adam as ND4J's {@code Adam}. */
  public static OptimizerConfig adam(double learningRate, double beta1, double beta2, double epsilon) {
    return of(Optimizer.ADAM, learningRate, 0, beta1, beta2, epsilon, 0);
  }

  /** AdaGrad with ND4J's default epsilon 1e-6. */
  public static OptimizerConfig adaGrad(double learningRate) {
    return adaGrad(learningRate, 1e-6);
  }

  /** AdaGrad as ND4J's {@code AdaGrad}. */
  public static OptimizerConfig adaGrad(double learningRate, double epsilon) {
    return of(Optimizer.ADAGRAD, learningRate, 0, 0, 0, epsilon, 0);
  }

  /** RMSProp with ND4J's defaults (decay 0.95, epsilon 1e-8). */
  public static OptimizerConfig rmsProp(double learningRate) {
    return rmsProp(learningRate, 0.95, 1e-8);
  }

  /** RMSProp as ND4J's {@code RmsProp}. */
  public static OptimizerConfig rmsProp(double learningRate, double decay, double epsilon) {
    return of(Optimizer.RMSPROP, learningRate, 0, 0, 0, epsilon, decay);
  }

  /** The pushed value is the update itself ({@code w -= g}), as ND4J's {@code NoOp}. */
  public static OptimizerConfig noOp() {
    return of(Optimizer.NO_OP, 0, 0, 0, 0, 0, 0);
  }

  /** A copy with a learning-rate schedule by iteration. */
  public OptimizerConfig withLearningRate(LearningRateSchedule schedule) {
    return new OptimizerConfig(kind, schedule, momentum, beta1, beta2, epsilon, decay, l1, l2,
        weightDecay, weightDecayAppliesLr);
  }

  /** A copy with L1 regularization: {@code g += l1 * sign(w)} before the updater. */
  public OptimizerConfig withL1(double l1) {
    return new OptimizerConfig(kind, learningRate, momentum, beta1, beta2, epsilon, decay, l1, l2,
        weightDecay, weightDecayAppliesLr);
  }

  /** A copy with L2 regularization: {@code g += l2 * w} before the updater. */
  public OptimizerConfig withL2(double l2) {
    return new OptimizerConfig(kind, learningRate, momentum, beta1, beta2, epsilon, decay, l1, l2,
        weightDecay, weightDecayAppliesLr);
  }

  /** A copy with weight decay: {@code update += coeff * (applyLr ? lr : 1) * w} after the updater. */
  public OptimizerConfig withWeightDecay(double coefficient, boolean applyLr) {
    return new OptimizerConfig(kind, learningRate, momentum, beta1, beta2, epsilon, decay, l1, l2,
        coefficient, applyLr);
  }

  private static double nonNegative(String field, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(field + " must be a finite value >= 0, got " + value);
    }
    return value;
  }

  /** The update rule. */
  public Optimizer kind() {
    return kind;
  }

  /** The learning rate by iteration. */
  public LearningRateSchedule learningRate() {
    return learningRate;
  }

  /** Momentum of MOMENTUM and NESTEROV. */
  public double momentum() {
    return momentum;
  }

  /** Adam's first-moment decay. */
  public double beta1() {
    return beta1;
  }

  /** Adam's second-moment decay. */
  public double beta2() {
    return beta2;
  }

  /** Epsilon of ADAM, ADAGRAD and RMSPROP. */
  public double epsilon() {
    return epsilon;
  }

  /** RMSProp's decay. */
  public double decay() {
    return decay;
  }

  /** L1 coefficient. */
  public double l1() {
    return l1;
  }

  /** L2 coefficient. */
  public double l2() {
    return l2;
  }

  /** Weight-decay coefficient. */
  public double weightDecay() {
    return weightDecay;
  }

  /** Whether weight decay is scaled by the learning rate. */
  public boolean weightDecayAppliesLr() {
    return weightDecayAppliesLr;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OptimizerConfig c && c.kind == kind && c.learningRate.equals(learningRate)
        && c.momentum == momentum && c.beta1 == beta1 && c.beta2 == beta2 && c.epsilon == epsilon
        && c.decay == decay && c.l1 == l1 && c.l2 == l2 && c.weightDecay == weightDecay
        && c.weightDecayAppliesLr == weightDecayAppliesLr;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, learningRate, momentum, beta1, beta2, epsilon, decay, l1, l2, weightDecay);
  }

  @Override
  public String toString() {
    return kind + "(lr=" + learningRate + ")";
  }
}
