package io.sparkps.ml.network;

import java.nio.FloatBuffer;
import java.util.Arrays;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.CNN2DFormat;
import org.deeplearning4j.nn.conf.ConvolutionMode;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.layers.convolution.ConvolutionLayer;
import org.deeplearning4j.nn.params.ConvolutionParamInitializer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.deeplearning4j.util.ConvolutionUtils;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * DL4J's 2-D convolution layer computed as one matrix product per pass over the whole minibatch,
 * with the same results. DL4J 1.0.0-M2.1's own layer (on a CPU without its oneDNN build) lays out
 * its patches through views and copies around small products and computes the forward pass twice
 * per training step; on the LeNet preset its two convolutions took about 136 ms a step of 64 in
 * one thread. Here the patches of all examples are laid out once, as a matrix of (input channel,
 * kernel row, kernel column) by (example, output row, output column), and each pass is one BLAS
 * product against it: the forward pass, the weights' gradient and the input's gradient (scattered
 * back from the patches); about 40 ms for the same two layers. The training forward pass keeps its
 * pre-activations and patch matrix for the backward pass (as {@link ForwardReuse} does for dense
 * layers), which uses them once, for that very input.
 *
 * <p>Only layers whose computation is exactly that are replaced: DL4J's {@code ConvolutionLayer}
 * itself (not its 1-D, depthwise, separable or transposed kinds), channels first, no dilation, no
 * weight noise, float parameters. Any call it was not built for (another data type, a mask) goes
 * to DL4J's own. System property {@value #PROPERTY}{@code =dl4j} keeps DL4J's own layer.
 */
public final class GemmConvolution extends ConvolutionLayer {
  private static final long serialVersionUID = 1L;
  /** The system property that chooses DL4J's own convolutions ({@code dl4j}) over these ({@code gemm}, the default). */
  static final String PROPERTY = "sparkps.convolutions";
  /**
   * The largest patch matrix, in floats, a pass lays out at a time (16M floats, 64 MiB; it is
   * held three times: in ND4J's memory, its gradient, and on the heap). A minibatch whose patches
   * are more is laid out a part of its examples at a time; an example whose patches alone are more
   * goes through DL4J's own layer.
   */
  static long maxPatchFloats = 16L << 20;

  /** The pre-activations of the last training forward pass (outside any workspace), and for which input. */
  private transient INDArray kept;
  private transient INDArray keptFor;
  /** Whether the last pass laid out the patches of its whole minibatch at once (the patch matrix still holds them). */
  private transient boolean wholePatches;
  /** Scratch, reused from step to step: the input's floats, the patch matrix, and products of its shape. */
  private transient float[] inputFloats;
  private transient float[] patchFloats;
  private transient INDArray patches;
  private transient INDArray patchGradient;
  private transient INDArray product;
  /**
   * Whether the backward pass computes the input's gradient; a network's first layer does not
   * when nothing reads it ({@link ForwardReuse#install(org.deeplearning4j.nn.multilayer.MultiLayerNetwork, boolean)}).
   */
  private transient boolean inputGradient = true;
  /** How many times this layer computed its pre-activations, and its input's gradient (for tests). */
  transient long computed;
  transient long inputGradients;

  GemmConvolution(ConvolutionLayer original) {
    super(original.conf(), original.params().dataType());
    ForwardReuse.takeOver(this, original);
    helper = null;
  }

  /** Whether {@link #PROPERTY} leaves these convolutions on. */
  static boolean enabled() {
    String value = System.getProperty(PROPERTY, "gemm").trim();
    if (value.equals("dl4j")) {
      return false;
    }
    if (!value.equals("gemm")) {
      throw new IllegalArgumentException("system property " + PROPERTY + " is '" + value
          + "': set it to gemm (one matrix product per pass, the default) or dl4j (DL4J's own convolutions)");
    }
    return true;
  }

  /** Replaces, in place, every eligible layer of a MultiLayerNetwork's {@code layers}; returns how many. */
  static int install(Layer[] layers) {
    if (!enabled()) {
      return 0;
    }
    int replaced = 0;
    for (int i = 0; i < layers.length; i++) {
      Layer next = replacement(layers[i]);
      if (next != null) {
        layers[i] = next;
        replaced++;
      }
    }
    return replaced;
  }

  /** As {@link #install(Layer[])} for a ComputationGraph's layers (each in its vertex and in the graph's list). */
  static int install(ComputationGraph graph) {
    if (!enabled()) {
      return 0;
    }
    return GraphNet.replaceLayers(graph, GemmConvolution::replacement);
  }

  /** The layer that takes {@code layer}'s place, or null. */
  private static Layer replacement(Layer layer) {
    return eligible(layer) ? new GemmConvolution((ConvolutionLayer) layer) : null;
  }

  static boolean eligible(Layer layer) {
    if (layer.getClass() != ConvolutionLayer.class) {
      return false;
    }
    org.deeplearning4j.nn.conf.layers.ConvolutionLayer conf =
        (org.deeplearning4j.nn.conf.layers.ConvolutionLayer) layer.conf().getLayer();
    return conf.getCnn2dDataFormat() == CNN2DFormat.NCHW && Arrays.stream(conf.getDilation()).allMatch(d -> d == 1)
        && conf.getWeightNoise() == null && layer.params() != null && layer.params().dataType() == DataType.FLOAT;
  }

  /** The geometry of one pass: sizes, kernel, strides, the top and left padding. */
  private record Shape(int n, int channels, int height, int width, int filters, int kh, int kw, int sh, int sw,
      int ph, int pw, int outHeight, int outWidth) {
    int rows() {
      return channels * kh * kw;
    }
  }

  private Shape shape(INDArray x) {
    org.deeplearning4j.nn.conf.layers.ConvolutionLayer conf = layerConf();
    int[] kernel = conf.getKernelSize();
    int[] strides = conf.getStride();
    int[] dilation = conf.getDilation();
    int[] out = ConvolutionUtils.getOutputSize(x, kernel, strides, conf.getPadding(), convolutionMode, dilation,
        CNN2DFormat.NCHW);
    int[] pad = convolutionMode == ConvolutionMode.Same
        ? ConvolutionUtils.getSameModeTopLeftPadding(out, new int[] {(int) x.size(2), (int) x.size(3)}, kernel,
            strides, dilation)
        : conf.getPadding();
    return new Shape((int) x.size(0), (int) x.size(1), (int) x.size(2), (int) x.size(3), (int) conf.getNOut(),
        kernel[0], kernel[1], strides[0], strides[1], pad[0], pad[1], out[0], out[1]);
  }

  /** The geometry of a pass over {@code x}, or null when this layer does not compute it (DL4J's does). */
  private Shape handled(INDArray x) {
    if (x == null || x.rank() != 4 || x.dataType() != DataType.FLOAT || maskArray != null) {
      return null;
    }
    Shape s = shape(x);
    return (long) s.rows() * s.outHeight() * s.outWidth() <= maxPatchFloats ? s : null; // one example's patches
  }

  /**
   * How many examples a pass lays out at a time: all of them when their patch matrix is within
   * {@link #maxPatchFloats}.
   */
  private static int examplesAtATime(Shape s) {
    long one = (long) s.rows() * s.outHeight() * s.outWidth();
    return (int) Math.max(1, Math.min(s.n(), maxPatchFloats / one));
  }

  @Override
  protected Pair<INDArray, INDArray> preOutput(boolean training, boolean forBackprop, LayerWorkspaceMgr workspaceMgr) {
    Shape s = handled(input);
    if (s == null) {
      return super.preOutput(training, forBackprop, workspaceMgr);
    }
    assertInputSet(false);
    validateInputRank();
    validateInputDepth(layerConf().getNIn());
    computed++;
    keptFor = null; // the patch matrix is about to be another input's
    long positions = (long) s.outHeight() * s.outWidth();
    INDArray w = getParam(ConvolutionParamInitializer.WEIGHT_KEY).reshape('c', s.filters(), s.rows());
    INDArray z = workspaceMgr.createUninitialized(ArrayType.ACTIVATIONS, DataType.FLOAT,
        new long[] {s.n(), s.filters(), s.outHeight(), s.outWidth()}, 'c');
    INDArray z3 = z.reshape('c', s.n(), s.filters(), positions);
    float[] image = floats(input);
    int step = examplesAtATime(s);
    for (int first = 0; first < s.n(); first += step) {
      int last = Math.min(s.n(), first + step);
      INDArray patchMatrix = patches(image, s, first, last);
      INDArray z2 = product(s.filters(), (last - first) * positions);
      Nd4j.gemm(w, patchMatrix, z2, false, false, 1.0, 0.0);
      if (hasBias()) {
        z2.addiColumnVector(getParam(ConvolutionParamInitializer.BIAS_KEY).reshape(s.filters(), 1));
      }
      z3.get(NDArrayIndex.interval(first, last), NDArrayIndex.all(), NDArrayIndex.all())
          .assign(z2.reshape('c', s.filters(), last - first, positions).permute(1, 0, 2));
    }
    wholePatches = step >= s.n();
    if (training && !forBackprop) {
      if (kept == null || !Arrays.equals(kept.shape(), z.shape())) {
        try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
          kept = Nd4j.createUninitialized(DataType.FLOAT, z.shape(), 'c');
        }
      }
      kept.assign(z); // the activation function works in place on z
      keptFor = input;
    }
    return new Pair<>(z, null);
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr workspaceMgr) {
    Shape s = handled(input);
    if (s == null || epsilon.dataType() != DataType.FLOAT) {
      keptFor = null;
      return super.backpropGradient(epsilon, workspaceMgr);
    }
    assertInputSet(true);
    // the training forward pass's pre-activations, or this input's computed again; either way the
    // last pass was over this input, so its patch matrix is this input's when it laid out all of it
    INDArray z = keptFor == input ? kept : preOutput(true, true, workspaceMgr).getFirst();
    boolean reusePatches = wholePatches;
    keptFor = null; // used once: the activation's backward pass overwrites it
    long positions = (long) s.outHeight() * s.outWidth();
    INDArray delta3 = layerConf().getActivationFn().backprop(z, epsilon).getFirst()
        .reshape('c', s.n(), s.filters(), positions);
    INDArray w = getParam(ConvolutionParamInitializer.WEIGHT_KEY).reshape('c', s.filters(), s.rows());
    INDArray weightGradient = gradientViews.get(ConvolutionParamInitializer.WEIGHT_KEY);
    INDArray weightGradient2 = weightGradient.reshape('c', s.filters(), s.rows());
    INDArray biasGradient = hasBias() ? gradientViews.get(ConvolutionParamInitializer.BIAS_KEY) : null;
    INDArray epsilonNext = workspaceMgr.createUninitialized(ArrayType.ACTIVATION_GRAD, DataType.FLOAT,
        input.shape(), 'c');
    float[] image = reusePatches ? null : floats(input);
    int step = examplesAtATime(s);
    for (int first = 0; first < s.n(); first += step) {
      int last = Math.min(s.n(), first + step);
      long columns = (last - first) * positions;
      INDArray patchMatrix = reusePatches ? patches : patches(image, s, first, last);
      // delta as filters by (example, output position), the patch matrix's columns
      INDArray delta2 = product(s.filters(), columns);
      delta2.reshape('c', s.filters(), last - first, positions)
          .assign(delta3.get(NDArrayIndex.interval(first, last), NDArrayIndex.all(), NDArrayIndex.all())
              .permute(1, 0, 2));
      if (biasGradient != null) {
        INDArray sums = delta2.sum(1).reshape(biasGradient.shape());
        if (first == 0) {
          biasGradient.assign(sums);
        } else {
          biasGradient.addi(sums);
        }
      }
      Nd4j.gemm(delta2, patchMatrix, weightGradient2, false, true, 1.0, first == 0 ? 0.0 : 1.0);
      if (inputGradient) {
        // the input's gradient: the weights' transpose times delta, scattered back from the patches
        INDArray patchGradient = patchGradient(s.rows(), columns);
        Nd4j.gemm(w, delta2, patchGradient, true, false, 1.0, 0.0);
        scatter(patchGradient, s, first, last, epsilonNext);
        inputGradients++;
      }
    }
    if (!inputGradient) {
      epsilonNext.assign(0); // read by nothing but an input preprocessor's reshape, which needs an array
    }
    Gradient gradient = new DefaultGradient();
    if (biasGradient != null) {
      gradient.gradientForVariable().put(ConvolutionParamInitializer.BIAS_KEY, biasGradient);
    }
    gradient.gradientForVariable().put(ConvolutionParamInitializer.WEIGHT_KEY, weightGradient);
    return new Pair<>(gradient, backpropDropOutIfPresent(epsilonNext));
  }

  /** Makes the backward pass leave the input's gradient out (zeros in its place): for a network's first layer. */
  void skipInputGradient() {
    inputGradient = false;
  }

  /** A scratch matrix of filters by columns, reused while the shape stays. */
  private INDArray product(int rows, long columns) {
    product = scratch(product, rows, columns);
    return product;
  }

  private INDArray patchGradient(int rows, long columns) {
    patchGradient = scratch(patchGradient, rows, columns);
    return patchGradient;
  }

  private static INDArray scratch(INDArray current, int rows, long columns) {
    if (current != null && current.size(0) == rows && current.size(1) == columns) {
      return current;
    }
    try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      return Nd4j.createUninitialized(DataType.FLOAT, new long[] {rows, columns}, 'c');
    }
  }

  /**
   * The patch matrix of examples {@code first} to {@code last} (exclusive) of {@code image} (the
   * input's floats): row (channel, kernel row, kernel column), column (example, output row, output
   * column), zero where the kernel lies on the padding.
   */
  private INDArray patches(float[] image, Shape s, int first, int last) {
    long columns = (long) (last - first) * s.outHeight() * s.outWidth();
    patches = scratch(patches, s.rows(), columns);
    int length = Math.toIntExact(s.rows() * columns);
    if (patchFloats == null || patchFloats.length < length) {
      patchFloats = new float[length];
    }
    move(image, 0, patchFloats, s, first, last, true);
    patches.data().asNioFloat().put(patchFloats, 0, length);
    return patches;
  }

  /**
   * Adds each patch's values of examples {@code first} to {@code last} back where they came from
   * in {@code target} (the input's shape), whose other examples it leaves.
   */
  private void scatter(INDArray patchMatrix, Shape s, int first, int last, INDArray target) {
    int length = Math.toIntExact(patchMatrix.length());
    if (patchFloats == null || patchFloats.length < length) {
      patchFloats = new float[length];
    }
    patchMatrix.data().asNioFloat().get(patchFloats, 0, length);
    int perExample = s.channels() * s.height() * s.width();
    float[] image = new float[(last - first) * perExample];
    move(image, first, patchFloats, s, first, last, false);
    target.data().asNioFloat().put(first * perExample, image, 0, image.length);
  }

  /**
   * Between images (C order, the first of them example {@code imageFirst}) and the patch matrix
   * of examples {@code first} to {@code last}: with {@code toPatches} each patch's values from
   * the images (zero on the padding), else each patch's values added back into them.
   */
  private static void move(float[] image, int imageFirst, float[] matrix, Shape s, int first, int last,
      boolean toPatches) {
    int columns = (last - first) * s.outHeight() * s.outWidth();
    int planes = s.outHeight() * s.outWidth();
    int width = s.outWidth();
    for (int c = 0; c < s.channels(); c++) {
      for (int ky = 0; ky < s.kh(); ky++) {
        for (int kx = 0; kx < s.kw(); kx++) {
          int row = ((c * s.kh() + ky) * s.kw() + kx) * columns;
          // the output columns whose input column lies inside the image
          int from = Math.min(width, Math.max(0, ceilDiv(s.pw() - kx, s.sw())));
          int to = Math.max(from, Math.min(width, ceilDiv(s.width() + s.pw() - kx, s.sw())));
          for (int i = first; i < last; i++) {
            for (int oy = 0; oy < s.outHeight(); oy++) {
              int iy = oy * s.sh() - s.ph() + ky;
              int o = row + (i - first) * planes + oy * width;
              if (iy < 0 || iy >= s.height()) {
                if (toPatches) {
                  Arrays.fill(matrix, o, o + width, 0f);
                }
                continue;
              }
              int base = (((i - imageFirst) * s.channels() + c) * s.height() + iy) * s.width() - s.pw() + kx;
              if (!toPatches) {
                for (int ox = from; ox < to; ox++) {
                  image[base + ox * s.sw()] += matrix[o + ox];
                }
                continue;
              }
              Arrays.fill(matrix, o, o + from, 0f);
              if (s.sw() == 1) {
                System.arraycopy(image, base + from, matrix, o + from, to - from);
              } else {
                for (int ox = from; ox < to; ox++) {
                  matrix[o + ox] = image[base + ox * s.sw()];
                }
              }
              Arrays.fill(matrix, o + to, o + width, 0f);
            }
          }
        }
      }
    }
  }

  /** The floats of {@code x} in C order, through a reused array. */
  private float[] floats(INDArray x) {
    // (a permuted array can say 'c' and not be a view, with its strides in another order)
    boolean plain = x.ordering() == 'c' && !x.isView() && x.offset() == 0
        && org.nd4j.linalg.api.shape.Shape.hasDefaultStridesForShape(x);
    INDArray c = plain ? x : x.dup('c');
    int length = Math.toIntExact(c.length());
    if (inputFloats == null || inputFloats.length != length) {
      inputFloats = new float[length];
    }
    FloatBuffer buffer = c.data().asNioFloat();
    buffer.get(inputFloats, 0, length);
    return inputFloats;
  }

  private static int ceilDiv(int a, int b) {
    return -Math.floorDiv(-a, b);
  }
}
