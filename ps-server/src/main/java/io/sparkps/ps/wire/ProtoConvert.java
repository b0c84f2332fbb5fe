package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.InitializerSpec;
import io.sparkps.ps.grpc.proto.OptimizerKind;
import io.sparkps.ps.grpc.proto.OptimizerSpec;
import io.sparkps.ps.grpc.proto.ScheduleKind;
import io.sparkps.ps.grpc.proto.ScheduleSpec;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.LearningRateSchedule;
import io.sparkps.ps.spec.Optimizer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.ps.spec.VariableSpec;
import java.util.Map;
import java.util.TreeMap;

/** Conversions between the public value types and their protocol messages. */
@Internal
public final class ProtoConvert {
  private ProtoConvert() {}

  /** A table's spec as the shards take it. */
  public static EmbeddingSpecProto toProto(EmbeddingSpec s) {
    return EmbeddingSpecProto.newBuilder().setName(s.name()).setDim(s.dim()).setGroup(s.group())
        .setOptimizer(s.optimizer().name()).setLearningRate(s.learningRate()).setBeta1(s.beta1()).setBeta2(s.beta2())
        .setEpsilon(s.epsilon()).setFtrlBeta(s.ftrlBeta()).setL1(s.l1()).setL2(s.l2())
        .setMaxRowsPerShard(s.maxRowsPerShard()).setEvictAfterSteps(s.evictAfterSteps()).setMinCount(s.minCount())
        .setInitScale(s.initScale()).setSeed(s.seed()).build();
  }

  /** The wire form of a spec. */
  public static VariableSpecProto toProto(VariableSpec spec) {
    VariableSpecProto.Builder b = VariableSpecProto.newBuilder().setName(spec.name())
        .setInitializer(toProto(spec.initializer())).setOptimizer(toProto(spec.optimizer()))
        .setGroup(spec.group()).setPinnedShard(spec.pinnedShard())
        .setAllowNonFinite(spec.allowNonFinite());
    for (long d : spec.shape()) {
      b.addShape(d);
    }
    return b.build();
  }

  static InitializerSpec toProto(Initializer init) {
    InitializerKind kind = init.kind() == Initializer.Kind.VALUES
        ? InitializerKind.FROM_VALUES : InitializerKind.valueOf(init.kind().name());
    return InitializerSpec.newBuilder().setKind(kind)
        .setA(init.a()).setB(init.b()).setSeed(init.seed()).setValuesDigest(init.valuesDigest()).build();
  }

  /** The wire form of an optimizer. */
  public static OptimizerSpec toProto(OptimizerConfig c) {
    return OptimizerSpec.newBuilder().setKind(OptimizerKind.valueOf(c.kind().name()))
        .setLearningRate(toProto(c.learningRate())).setMomentum(c.momentum()).setBeta1(c.beta1())
        .setBeta2(c.beta2()).setEpsilon(c.epsilon()).setDecay(c.decay()).setL1(c.l1()).setL2(c.l2())
        .setWeightDecay(c.weightDecay()).setWeightDecayAppliesLr(c.weightDecayAppliesLr()).build();
  }

  /** The optimizer described by a wire form. */
  public static OptimizerConfig fromProto(OptimizerSpec p) {
    double lr = p.getLearningRate().getInitial();
    OptimizerConfig c = switch (p.getKind()) {
      case SGD -> OptimizerConfig.sgd(lr);
      case MOMENTUM -> OptimizerConfig.momentum(lr, p.getMomentum());
      case NESTEROV -> OptimizerConfig.nesterov(lr, p.getMomentum());
      case ADAM -> OptimizerConfig.adam(lr, p.getBeta1(), p.getBeta2(), p.getEpsilon());
      case ADAGRAD -> OptimizerConfig.adaGrad(lr, p.getEpsilon());
      case RMSPROP -> OptimizerConfig.rmsProp(lr, p.getDecay(), p.getEpsilon());
      case NO_OP -> OptimizerConfig.noOp();
      default -> throw new IllegalArgumentException("unknown optimizer kind " + p.getKind());
    };
    return c.withLearningRate(fromProto(p.getLearningRate())).withL1(p.getL1()).withL2(p.getL2())
        .withWeightDecay(p.getWeightDecay(), p.getWeightDecayAppliesLr());
  }

  static ScheduleSpec toProto(LearningRateSchedule s) {
    ScheduleSpec.Builder b = ScheduleSpec.newBuilder().setKind(ScheduleKind.valueOf(s.kind().name()))
        .setInitial(s.initial()).setGamma(s.gamma()).setPower(s.power()).setStep(s.stepSize())
        .setMaxIter(s.maxIter());
    b.putAllValues(s.values());
    return b.build();
  }

  static LearningRateSchedule fromProto(ScheduleSpec s) {
    return switch (s.getKind()) {
      case EXPONENTIAL -> LearningRateSchedule.exponential(s.getInitial(), s.getGamma());
      case STEP -> LearningRateSchedule.step(s.getInitial(), s.getGamma(), s.getStep());
      case INVERSE -> LearningRateSchedule.inverse(s.getInitial(), s.getGamma(), s.getPower());
      case POLY -> LearningRateSchedule.poly(s.getInitial(), s.getPower(), s.getMaxIter());
      case SIGMOID -> LearningRateSchedule.sigmoid(s.getInitial(), s.getGamma(), (long) s.getStep());
      case MAP -> LearningRateSchedule.map(new TreeMap<Long, Double>(Map.copyOf(s.getValuesMap())));
      default -> LearningRateSchedule.fixed(s.getInitial());
    };
  }

  /** The wire form of a group. */
  public static GroupSpec toProto(ConsistencyGroup g) {
    return GroupSpec.newBuilder().setName(g.name()).setMode(ConsistencyMode.valueOf(g.mode().name()))
        .setNumWorkers(g.numWorkers()).setStaleness(g.staleness()).setStalenessAwareRate(g.stalenessAwareRate()).build();
  }

  /** The group described by a wire form. */
  public static ConsistencyGroup fromProto(GroupSpec g) {
    return new ConsistencyGroup(g.getName(), Consistency.valueOf(g.getMode().name()),
        g.getNumWorkers(), g.getStaleness(), g.getStalenessAwareRate());
  }

  /** The public description of one slice. */
  public static VariableInfo fromProto(VariableInfoProto p) {
    VariableSpecProto s = p.getSpec();
    return new VariableInfo(s.getName(), s.getShapeList().stream().mapToLong(Long::longValue).toArray(),
        p.getShard(), p.getRowStart(), p.getRowEnd(), p.getVersion(), p.getInitialized(), s.getGroup(),
        Optimizer.valueOf(s.getOptimizer().getKind().name()));
  }

  /** A one-line description of a spec for error messages. */
  public static String describe(VariableSpecProto s) {
    return "shape " + s.getShapeList() + ", initializer " + s.getInitializer().getKind()
        + ", optimizer " + s.getOptimizer().getKind() + " lr " + s.getOptimizer().getLearningRate().getInitial()
        + ", group '" + s.getGroup() + "'";
  }
}
