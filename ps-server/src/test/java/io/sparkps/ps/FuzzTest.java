package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.testing.RawCalls;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * An authenticated client sends thousands of randomly mutated update frames and pull requests
 * (sizes, offsets, counts, rows, names, ops; negative and overflowing values; broken lengths and
 * bytes) with a fixed seed, straight onto the wire: over gRPC and over the bulk port. Every
 * refusal names the field at fault, the ps keeps serving within bounded memory, and its variables
 * are unchanged (each update's payload is zeros, so even one that a mutation left valid adds
 * nothing).
 */
class FuzzTest {
  private static final int ROUNDS = 2000;
  private static final Pattern NAMES_A_FIELD = Pattern.compile("\\(fields? [a-z_]+(, [a-z_]+)*\\)");
  private static final long[] EXTREMES = {-1, 0, 1, 2047, 2048, 2049, 99, 100, Long.MAX_VALUE, Long.MIN_VALUE,
      Integer.MAX_VALUE, Integer.MIN_VALUE, 1L << 32, (1L << 62) + 7};
  private static final MethodDescriptor<byte[], byte[]> UPDATE = method("Update", MethodDescriptor.MethodType.UNARY);
  private static final MethodDescriptor<byte[], byte[]> PULL = method("Pull", MethodDescriptor.MethodType.SERVER_STREAMING);
  private static final MethodDescriptor<byte[], byte[]> UPDATE_STREAM =
      method("UpdateStream", MethodDescriptor.MethodType.CLIENT_STREAMING);

  private final Random random = new Random(2026);
  private final Map<String, Integer> refusals = new TreeMap<>();

  private static MethodDescriptor<byte[], byte[]> method(String name, MethodDescriptor.MethodType type) {
    return MethodDescriptor.<byte[], byte[]>newBuilder().setType(type)
        .setFullMethodName(MethodDescriptor.generateFullMethodName("sparkps.ps.v1.ParameterService", name))
        .setRequestMarshaller(RawCalls.BYTES).setResponseMarshaller(RawCalls.BYTES).build();
  }

  private long pick() {
    return random.nextInt(3) == 0 ? random.nextLong() : EXTREMES[random.nextInt(EXTREMES.length)];
  }

  /** A valid zero update of "w" (64 x 32) or rows of "e" (100 x 8), then 1-3 mutations of its header and payload. */
  private byte[][] mutatedUpdate() {
    boolean sparse = random.nextBoolean();
    Segment.Builder seg = sparse
        ? Segment.newBuilder().setName("e").setCount(16).addRows(3).addRows(97)
        : Segment.newBuilder().setName("w").setOffset(0).setCount(2048);
    FrameHeader.Builder h = FrameHeader.newBuilder().setOp(sparse ? UpdateOp.GRADIENT : UpdateOp.ASSIGN_ADD);
    int floats = (int) seg.getCount();
    for (int m = 1 + random.nextInt(3); m > 0; m--) {
      switch (random.nextInt(9)) {
        case 0 -> seg.setOffset(pick());
        case 1 -> seg.setCount(pick());
        case 2 -> seg.addRows(pick());
        case 3 -> seg.setName(random.nextBoolean() ? "" : "x".repeat(random.nextInt(3000)));
        case 4 -> h.setOpValue(new int[] {0, UpdateOp.GRADIENT_VALUE, UpdateOp.ASSIGN_ADD_VALUE, 99, -5}[random.nextInt(5)]);
        case 5 -> h.setWorker((int) pick());
        case 6 -> h.setStep(pick());
        case 7 -> h.addSegments(Segment.newBuilder().setName(random.nextBoolean() ? "w" : "e").setOffset(pick())
            .setCount(pick()));
        default -> floats = new int[] {0, 1, 15, 2047, 2049, 10_000}[random.nextInt(6)];
      }
    }
    return new byte[][] {h.addSegments(0, seg).build().toByteArray(), new byte[4 * floats]};
  }

  private PullRequest mutatedPull() {
    PullItem.Builder item = PullItem.newBuilder().setName(random.nextBoolean() ? "w" : "e");
    switch (random.nextInt(4)) {
      case 0 -> item.setRowStart(pick()).setRowEnd(pick());
      case 1 -> {
        long row = random.nextBoolean() ? 5 : pick();
        for (int k = random.nextBoolean() ? 3 : 200_000; k > 0; k--) {
          item.addRows(row); // repeated rows: 200,000 x 8 values is more than "e" may have
        }
      }
      case 2 -> item.setName("nope-" + random.nextInt(100));
      default -> item.setRowStart(pick());
    }
    return PullRequest.newBuilder().addItems(item).setTimeoutMs(100).build();
  }

  private void refused(String transport, String description) {
    assertTrue(description != null && NAMES_A_FIELD.matcher(description).find(),
        transport + " refusal does not name its field: " + description);
    java.util.regex.Matcher m = NAMES_A_FIELD.matcher(description);
    m.find();
    refusals.merge(transport + " " + m.group(), 1, Integer::sum);
  }

  /** The gRPC frame encoding: a big-endian header length, the header, the payload. */
  private byte[] frame(byte[] header, byte[] payload) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream data = new DataOutputStream(out);
    int length = header.length;
    switch (random.nextInt(8)) {
      case 0 -> length = (int) pick();
      case 1 -> length += random.nextBoolean() ? 1 : -1;
      case 2 -> header = header.clone();
      default -> { }
    }
    if (header.length > 0 && random.nextInt(6) == 0) {
      header[random.nextInt(header.length)] ^= (byte) (1 + random.nextInt(255));
    }
    data.writeInt(length);
    data.write(header);
    data.write(payload);
    if (random.nextInt(10) == 0) {
      data.write(new byte[1 + random.nextInt(3)]); // not whole floats
    }
    return out.toByteArray();
  }

  @Test
  void thousandsOfMutatedRequests_areRefusedByField_andChangeNothing() throws Exception {
    PsToken token = PsToken.generate();
    // A small per-variable maximum, so that pulls of many repeated rows run into it.
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token).optThreads(2)
             .optMaxVariableElements(1 << 20).build().start();
         PsClient client = PsClient.builder().setShards(java.util.List.of(ps.address())).setToken(token)
             .optSameJvmTransfers(false).build()) {
      client.create(VariableSpec.builder().setName("w").setShape(64, 32).optOptimizer(OptimizerConfig.sgd(1))
          .build());
      client.create(VariableSpec.builder().setName("e").setShape(100, 8).optOptimizer(OptimizerConfig.sgd(1)).build());
      client.initializeAll();
      INDArray w = client.pull("w");
      INDArray e = client.pull("e");
      Runtime rt = Runtime.getRuntime();
      System.gc();
      long heapBefore = rt.totalMemory() - rt.freeMemory();
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", ps.port()).usePlaintext()
          .intercept(Auth.client(token)).build();
      int accepted = 0;
      try {
        for (int i = 0; i < ROUNDS; i++) {
          CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS);
          try {
            if (random.nextInt(4) == 0) {
              Iterator<byte[]> frames = ClientCalls.blockingServerStreamingCall(channel, PULL, options,
                  mutatedPull().toByteArray());
              frames.forEachRemaining(f -> { });
            } else {
              byte[][] update = mutatedUpdate();
              ClientCalls.blockingUnaryCall(channel, UPDATE, options, frame(update[0], update[1]));
            }
            accepted++;
          } catch (StatusRuntimeException refusal) {
            refused("grpc", refusal.getStatus().getDescription());
          }
        }
        for (int i = 0; i < ROUNDS; i++) {
          accepted += bulk(ps.bulkPort(), token) ? 1 : 0;
        }
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      System.gc();
      long heapGrowth = rt.totalMemory() - rt.freeMemory() - heapBefore;
      System.out.printf("fuzz: %d requests, %d accepted (zero updates, valid pulls), heap growth %d MiB, refusals %s%n",
          2 * ROUNDS, accepted, heapGrowth >> 20, refusals);
      assertEquals(w, client.pull("w"), "'w' unchanged");
      assertEquals(e, client.pull("e"), "'e' unchanged");
      assertEquals(2, client.listVariables().size(), "the ps still serves");
      assertTrue(heapGrowth < 256L << 20, "heap grew by " + (heapGrowth >> 20) + " MiB");
      assertTrue(refusals.size() >= 8, "the mutations reach many checks: " + refusals);
    }
  }

  /** One mutated request on a fresh bulk connection (a malformed one closes it); true when accepted. */
  private boolean bulk(int port, PsToken token) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      s.setSoTimeout(10_000);
      // Buffered and without Nagle's delay, as the real client sends: small writes would otherwise wait
      // for the server's delayed acknowledgement, 40 ms a request.
      s.setTcpNoDelay(true);
      DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(s.getOutputStream(), 1 << 16));
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] secret = token.secret().getBytes(StandardCharsets.US_ASCII);
      out.writeInt(0x53504b42); // the bulk protocol: magic "SPKB", version 2, the token
      out.writeInt(2);
      out.writeInt(secret.length);
      out.write(secret);
      out.flush();
      assertEquals(0, in.readUnsignedByte(), "the run's token is admitted");
      boolean read = random.nextInt(4) == 0;
      byte[] header = read ? mutatedPull().toByteArray() : null;
      byte[] payload = new byte[0];
      if (!read) {
        byte[][] update = mutatedUpdate();
        header = update[0];
        payload = update[1];
      }
      int kind = random.nextInt(20) == 0 ? 7 : read ? 2 : 1;
      // A length within range that the bytes sent do not fill would only stall this connection: lie out of range.
      int headerLength = random.nextInt(10) == 0
          ? new int[] {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, (64 << 20) + 1}[random.nextInt(4)] : header.length;
      long payloadBytes = random.nextInt(8) == 0 ? pick() : payload.length;
      out.writeByte(kind);
      out.writeInt(headerLength);
      out.write(header);
      out.writeLong(payloadBytes);
      if (payloadBytes >= 0 && payloadBytes <= payload.length) {
        out.write(payload, 0, (int) payloadBytes);
      } else if (payloadBytes > 0 && payloadBytes <= 1 << 20) {
        out.write(new byte[(int) payloadBytes]); // more zeros than the header describes
      }
      out.flush();
      int status;
      try {
        status = in.readUnsignedByte();
      } catch (java.io.EOFException | java.net.SocketException closed) {
        throw new AssertionError("the bulk port closed the connection without saying why", closed);
      }
      byte[] body = new byte[in.readInt()];
      in.readFully(body);
      if (status != 0) {
        refused("bulk", new String(body, StandardCharsets.UTF_8));
        return false;
      }
      return true;
    } catch (java.net.SocketException writeCut) {
      // the server refused and closed while this client still wrote: its answer is in the RST's way
      refusals.merge("bulk (cut while writing)", 1, Integer::sum);
      return false;
    }
  }

  @Test
  void anUpdateStreamLongerThanTheShard_isCutOff_beforeItIsHeldWhole() throws Exception {
    PsToken token = PsToken.generate();
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token).optThreads(2).build().start();
         PsClient client = PsClient.builder().setShards(java.util.List.of(ps.address())).setToken(token).build()) {
      client.create(VariableSpec.builder().setName("w").setShape(64, 32).optInitializer(Initializer.constant(1)).build());
      client.initializeAll();
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", ps.port()).usePlaintext()
          .intercept(Auth.client(token)).build();
      try {
        byte[] header = FrameHeader.newBuilder().setOp(UpdateOp.ASSIGN_ADD).addSegments(Segment.newBuilder()
            .setName("w").setCount(2048)).build().toByteArray();
        ByteArrayOutputStream frame = new ByteArrayOutputStream();
        new DataOutputStream(frame).writeInt(header.length);
        frame.write(header);
        frame.write(new byte[8 << 20]); // 2 Mi floats a frame: far more than the 2,048 the shard holds
        java.util.concurrent.CompletableFuture<Throwable> outcome = new java.util.concurrent.CompletableFuture<>();
        io.grpc.stub.StreamObserver<byte[]> requests = ClientCalls.asyncClientStreamingCall(
            channel.newCall(UPDATE_STREAM, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS)),
            new io.grpc.stub.StreamObserver<>() {
              @Override
              public void onNext(byte[] value) {
                outcome.complete(null);
              }

              @Override
              public void onError(Throwable t) {
                outcome.complete(t);
              }

              @Override
              public void onCompleted() {
                outcome.complete(null);
              }
            });
        for (int i = 0; i < 12 && !outcome.isDone(); i++) { // 96 MiB in all, over the 80 MiB one frame may add
          requests.onNext(frame.toByteArray());
        }
        requests.onCompleted();
        Throwable t = outcome.get(30, TimeUnit.SECONDS);
        assertTrue(t instanceof StatusRuntimeException, "refused: " + t);
        StatusRuntimeException e = (StatusRuntimeException) t;
        assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
        assertTrue(e.getStatus().getDescription().contains("update stream to ps 0 carries more than"), e.getMessage());
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      assertEquals(2048.0, client.pull("w").sumNumber().doubleValue(), 0.0, "nothing was applied");
    }
  }
}
