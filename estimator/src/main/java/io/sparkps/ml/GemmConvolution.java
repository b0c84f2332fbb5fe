package io.sparkps.ml;

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
final class GemmConvolution extends ConvolutionLayer {
  private static final long serialVersionUID = 1L;
  /** The system property that chooses DL4J's own convolutions ({@code dl4j}) over these ({@code gemm}, the default). */
  static final String PROPERTY = "sparkps.convolutions";
  /**
   * The largest patch matrix, in floats, a pass lays out (16M floats, 64 MiB; it is held three
   * times: in ND4J's memory, its gradient, and on the heap). A larger minibatch of larger images
   * goes through DL4J's own layer, which lays out as many patches in its workspaces.
   */
  static long maxPatchFloats = 16L << 20;

  /** The pre-activations of the last training forward pass (outside any workspace), and for which input. */
  private transient INDArray kept;
  private transient INDArray keptFor;
  /** Scratch, reused from step to step: the input's floats, the patch matrix, and products of its shape. */
  private transient float[] inputFloats;
  private transient float[] patchFloats;
  private transient INDArray patches;
  private transient INDArray patchGradient;
  private transient INDArray product;
  /** How many times this layer computed its pre-activations (for tests). */
  transient long computed;

  GemmConvolution(ConvolutionLayer original) {
    super(original.conf(), original.params().dataType());
    setIndex(original.getIndex());
    setParamTable(original.paramTable());
    setParamsViewArray(original.params());
    if (original.getGradientsViewArray() != null) {
      setBackpropGradientsViewArray(original.getGradientsViewArray());
    }
    setListeners(original.getListeners());
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
      if (eligible(layers[i])) {
        layers[i] = new GemmConvolution((ConvolutionLayer) layers[i]);
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
    return GraphNet.replaceLayers(graph, l -> eligible(l) ? new GemmConvolution((ConvolutionLayer) l) : null);
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

    int columns() {
      return n * outHeight * outWidth;
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

  private boolean handles(INDArray x) {
    if (x == null || x.rank() != 4 || x.dataType() != DataType.FLOAT || maskArray != null) {
      return false;
    }
    Shape s = shape(x);
    return (long) s.rows() * s.columns() <= maxPatchFloats;
  }

  @Override
  protected Pair<INDArray, INDArray> preOutput(boolean training, boolean forBackprop, LayerWorkspaceMgr workspaceMgr) {
    if (!handles(input)) {
      return super.preOutput(training, forBackprop, workspaceMgr);
    }
    assertInputSet(false);
    validateInputRank();
    validateInputDepth(layerConf().getNIn());
    computed++;
    keptFor = null; // the patch matrix is about to be another input's
    Shape s = shape(input);
    INDArray patchMatrix = patches(input, s);
    INDArray w = getParam(ConvolutionParamInitializer.WEIGHT_KEY).reshape('c', s.filters(), s.rows());
    INDArray z2 = product(s.filters(), s.columns());
    Nd4j.gemm(w, patchMatrix, z2, false, false, 1.0, 0.0);
    if (hasBias()) {
      z2.addiColumnVector(getParam(ConvolutionParamInitializer.BIAS_KEY).reshape(s.filters(), 1));
    }
    INDArray z = workspaceMgr.createUninitialized(ArrayType.ACTIVATIONS, DataType.FLOAT,
        new long[] {s.n(), s.filters(), s.outHeight(), s.outWidth()}, 'c');
    z.reshape('c', s.n(), s.filters(), (long) s.outHeight() * s.outWidth())
        .assign(z2.reshape('c', s.filters(), s.n(), (long) s.outHeight() * s.outWidth()).permute(1, 0, 2));
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
    if (!handles(input) || epsilon.dataType() != DataType.FLOAT) {
      keptFor = null;
      return super.backpropGradient(epsilon, workspaceMgr);
    }
    assertInputSet(true);
    INDArray z;
    if (keptFor == null || keptFor != input) {
      z = preOutput(true, true, workspaceMgr).getFirst();
    } else {
      z = kept; // and the patch matrix is still this input's
    }
    keptFor = null; // used once: the activation's backward pass overwrites it
    Shape s = shape(input);
    INDArray delta = layerConf().getActivationFn().backprop(z, epsilon).getFirst();
    // delta as filters by (example, output position), the patch matrix's columns
    INDArray delta2 = product(s.filters(), s.columns());
    delta2.reshape('c', s.filters(), s.n(), (long) s.outHeight() * s.outWidth())
        .assign(delta.reshape('c', s.n(), s.filters(), (long) s.outHeight() * s.outWidth()).permute(1, 0, 2));
    INDArray patchMatrix = patches;
    Gradient gradient = new DefaultGradient();
    if (hasBias()) {
      INDArray biasGradient = gradientViews.get(ConvolutionParamInitializer.BIAS_KEY);
      biasGradient.assign(delta2.sum(1).reshape(biasGradient.shape()));
      gradient.gradientForVariable().put(ConvolutionParamInitializer.BIAS_KEY, biasGradient);
    }
    INDArray weightGradient = gradientViews.get(ConvolutionParamInitializer.WEIGHT_KEY);
    Nd4j.gemm(delta2, patchMatrix, weightGradient.reshape('c', s.filters(), s.rows()), false, true, 1.0, 0.0);
    gradient.gradientForVariable().put(ConvolutionParamInitializer.WEIGHT_KEY, weightGradient);
    // the input's gradient: the weights' transpose times delta, scattered back from the patches
    INDArray w = getParam(ConvolutionParamInitializer.WEIGHT_KEY).reshape('c', s.filters(), s.rows());
    if (patchGradient == null || !Arrays.equals(patchGradient.shape(), patchMatrix.shape())) {
      try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        patchGradient = Nd4j.createUninitialized(DataType.FLOAT, patchMatrix.shape(), 'c');
      }
    }
    Nd4j.gemm(w, delta2, patchGradient, true, false, 1.0, 0.0);
    INDArray epsilonNext = workspaceMgr.createUninitialized(ArrayType.ACTIVATION_GRAD, DataType.FLOAT,
        input.shape(), 'c');
    scatter(patchGradient, s, epsilonNext);
    return new Pair<>(gradient, backpropDropOutIfPresent(epsilonNext));
  }

  /** A scratch matrix of filters by columns, reused while the shape stays. */
  private INDArray product(int rows, int columns) {
    if (product == null || product.size(0) != rows || product.size(1) != columns) {
      try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        product = Nd4j.createUninitialized(DataType.FLOAT, new long[] {rows, columns}, 'c');
      }
    }
    return product;
  }

  /**
   * The patch matrix of {@code x}: row (channel, kernel row, kernel column), column (example,
   * output row, output column), zero where the kernel lies on the padding.
   */
  private INDArray patches(INDArray x, Shape s) {
    int rows = s.rows();
    int columns = s.columns();
    if (patches == null || patches.size(0) != rows || patches.size(1) != columns) {
      try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        patches = Nd4j.createUninitialized(DataType.FLOAT, new long[] {rows, columns}, 'c');
      }
      patchFloats = new float[Math.multiplyExact(rows, columns)];
    }
    move(floats(x), patchFloats, s, true);
    patches.data().asNioFloat().put(patchFloats, 0, patchFloats.length);
    return patches;
  }

  /** Adds each patch's values back where they came from in {@code target} (the input's shape), zero elsewhere. */
  private void scatter(INDArray patchMatrix, Shape s, INDArray target) {
    patchMatrix.data().asNioFloat().get(patchFloats, 0, patchFloats.length);
    float[] image = new float[Math.toIntExact(target.length())];
    move(image, patchFloats, s, false);
    target.data().asNioFloat().put(image, 0, image.length);
  }

  /**
   * Between an image batch (C order) and its patch matrix: with {@code toPatches} each patch's
   * values from the image (zero on the padding), else each patch's values added back into it.
   */
  private static void move(float[] image, float[] matrix, Shape s, boolean toPatches) {
    int columns = s.columns();
    int planes = s.outHeight() * s.outWidth();
    int width = s.outWidth();
    for (int c = 0; c < s.channels(); c++) {
      for (int ky = 0; ky < s.kh(); ky++) {
        for (int kx = 0; kx < s.kw(); kx++) {
          int row = ((c * s.kh() + ky) * s.kw() + kx) * columns;
          // the output columns whose input column lies inside the image
          int first = Math.min(width, Math.max(0, ceilDiv(s.pw() - kx, s.sw())));
          int last = Math.max(first, Math.min(width, ceilDiv(s.width() + s.pw() - kx, s.sw())));
          for (int i = 0; i < s.n(); i++) {
            for (int oy = 0; oy < s.outHeight(); oy++) {
              int iy = oy * s.sh() - s.ph() + ky;
              int o = row + i * planes + oy * width;
              if (iy < 0 || iy >= s.height()) {
                if (toPatches) {
                  Arrays.fill(matrix, o, o + width, 0f);
                }
                continue;
              }
              int base = ((i * s.channels() + c) * s.height() + iy) * s.width() - s.pw() + kx;
              if (!toPatches) {
                for (int ox = first; ox < last; ox++) {
                  image[base + ox * s.sw()] += matrix[o + ox];
                }
                continue;
              }
              Arrays.fill(matrix, o, o + first, 0f);
              if (s.sw() == 1) {
                System.arraycopy(image, base + first, matrix, o + first, last - first);
              } else {
                for (int ox = first; ox < last; ox++) {
                  matrix[o + ox] = image[base + ox * s.sw()];
                }
              }
              Arrays.fill(matrix, o + last, o + width, 0f);
            }
          }
        }
      }
    }
  }

  /** The floats of {@code x} in C order, through a reused array. */
  private float[] floats(INDArray x) {
    INDArray c = x.isView() || x.ordering() != 'c' ? x.dup('c') : x;
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
