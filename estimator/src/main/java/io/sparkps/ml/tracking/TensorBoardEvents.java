package io.sparkps.ml.tracking;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A TensorBoard event file ({@code events.out.tfevents.<seconds>.<host>}) on any Hadoop file system:
 * records as TFRecord frames them (the payload's length, little-endian, and its masked CRC-32C, the
 * payload, its masked CRC-32C), each payload a {@code tensorflow.Event} protocol buffer: first the
 * file version, then scalar summaries ({@code Summary.Value.simple_value}) and histograms ({@code
 * Summary.Value.histo}, a {@code HistogramProto}) at their step and wall time. The few fields written are encoded here by their field numbers (event.proto and
 * summary.proto), so no TensorFlow class is needed; TensorBoard's own reader reads the files back in
 * the tests.
 */
final class TensorBoardEvents implements Closeable {
  private static final int EVENT_WALL_TIME = 1;
  private static final int EVENT_STEP = 2;
  private static final int EVENT_FILE_VERSION = 3;
  private static final int EVENT_SUMMARY = 5;
  private static final int SUMMARY_VALUE = 1;
  private static final int VALUE_TAG = 1;
  private static final int VALUE_SIMPLE = 2;
  private static final int VALUE_HISTO = 5;
  private static final int HISTO_MIN = 1;
  private static final int HISTO_MAX = 2;
  private static final int HISTO_NUM = 3;
  private static final int HISTO_SUM = 4;
  private static final int HISTO_SUM_SQUARES = 5;
  private static final int HISTO_BUCKET_LIMIT = 6;
  private static final int HISTO_BUCKET = 7;
  /** The buckets of a histogram, of equal width between its smallest and largest value. */
  static final int BUCKETS = 30;
  private final FSDataOutputStream out;
  private final Path file;

  private TensorBoardEvents(FSDataOutputStream out, Path file) {
    this.out = out;
    this.file = file;
  }

  /** Creates a new event file in {@code dir} and writes its version record. */
  static TensorBoardEvents create(FileSystem fs, Path dir, String host, double wallTimeSeconds) throws IOException {
    fs.mkdirs(dir);
    Path file = new Path(dir, "events.out.tfevents." + (long) wallTimeSeconds + "." + host + ".sparkps");
    TensorBoardEvents events = new TensorBoardEvents(fs.create(file, false), file);
    ByteArrayOutputStream event = new ByteArrayOutputStream();
    writeDouble(event, EVENT_WALL_TIME, wallTimeSeconds);
    writeBytes(event, EVENT_FILE_VERSION, "brain.Event:2".getBytes(StandardCharsets.UTF_8));
    events.record(event.toByteArray());
    return events;
  }

  /** The file written. */
  Path file() {
    return file;
  }

  /** Writes one scalar: {@code tag}'s {@code value} at {@code step}, recorded at {@code wallTimeSeconds}. */
  void scalar(String tag, long step, double wallTimeSeconds, float value) throws IOException {
    ByteArrayOutputStream v = new ByteArrayOutputStream();
    writeBytes(v, VALUE_TAG, tag.getBytes(StandardCharsets.UTF_8));
    writeFloat(v, VALUE_SIMPLE, value);
    summaryEvent(step, wallTimeSeconds, v.toByteArray());
  }

  /**
   * Writes the histogram of {@code values} as {@code tag} at {@code step}: their count, sum, sum of
   * squares, smallest and largest, and {@link #BUCKETS} buckets of equal width between those two (one
   * when all are equal), each bucket named by its right edge as {@code HistogramProto} has it. Values
   * that are not finite are left out; with none finite nothing is written.
   */
  void histogram(String tag, long step, double wallTimeSeconds, float[] values) throws IOException {
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    double sum = 0;
    double sumSquares = 0;
    long num = 0;
    for (float f : values) {
      if (Float.isFinite(f)) {
        min = Math.min(min, f);
        max = Math.max(max, f);
        sum += f;
        sumSquares += (double) f * f;
        num++;
      }
    }
    if (num == 0) {
      return;
    }
    int buckets = max > min ? BUCKETS : 1;
    double width = (max - min) / buckets;
    double[] limits = new double[buckets];
    for (int i = 0; i < buckets; i++) {
      limits[i] = i == buckets - 1 ? max : min + width * (i + 1);
    }
    double[] counts = new double[buckets];
    for (float f : values) {
      if (Float.isFinite(f)) {
        int b = buckets == 1 ? 0 : (int) Math.min(buckets - 1, Math.floor((f - min) / width));
        counts[b]++;
      }
    }
    ByteArrayOutputStream histo = new ByteArrayOutputStream();
    writeDouble(histo, HISTO_MIN, min);
    writeDouble(histo, HISTO_MAX, max);
    writeDouble(histo, HISTO_NUM, num);
    writeDouble(histo, HISTO_SUM, sum);
    writeDouble(histo, HISTO_SUM_SQUARES, sumSquares);
    writePackedDoubles(histo, HISTO_BUCKET_LIMIT, limits);
    writePackedDoubles(histo, HISTO_BUCKET, counts);
    ByteArrayOutputStream v = new ByteArrayOutputStream();
    writeBytes(v, VALUE_TAG, tag.getBytes(StandardCharsets.UTF_8));
    writeBytes(v, VALUE_HISTO, histo.toByteArray());
    summaryEvent(step, wallTimeSeconds, v.toByteArray());
  }

  private void summaryEvent(long step, double wallTimeSeconds, byte[] value) throws IOException {
    ByteArrayOutputStream summary = new ByteArrayOutputStream();
    writeBytes(summary, SUMMARY_VALUE, value);
    ByteArrayOutputStream event = new ByteArrayOutputStream();
    writeDouble(event, EVENT_WALL_TIME, wallTimeSeconds);
    writeVarintField(event, EVENT_STEP, step);
    writeBytes(event, EVENT_SUMMARY, summary.toByteArray());
    record(event.toByteArray());
  }

  /** Makes what was written visible to readers (TensorBoard reads the file as it grows). */
  void flush() throws IOException {
    out.hflush();
  }

  @Override
  public void close() throws IOException {
    out.close();
  }

  private void record(byte[] payload) throws IOException {
    byte[] length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(payload.length).array();
    ByteBuffer frame = ByteBuffer.allocate(8 + 4 + payload.length + 4).order(ByteOrder.LITTLE_ENDIAN);
    frame.put(length).putInt(maskedCrc(length)).put(payload).putInt(maskedCrc(payload));
    out.write(frame.array());
  }

  /** TFRecord's masked CRC-32C: rotated right by 15 bits, plus a constant. */
  static int maskedCrc(byte[] data) {
    CRC32C crc = new CRC32C();
    crc.update(data);
    int c = (int) crc.getValue();
    return ((c >>> 15) | (c << 17)) + 0xa282ead8;
  }

  private static void writeTag(OutputStream out, int field, int wireType) throws IOException {
    writeVarint(out, ((long) field << 3) | wireType);
  }

  private static void writeVarint(OutputStream out, long value) throws IOException {
    while ((value & ~0x7FL) != 0) {
      out.write((int) ((value & 0x7F) | 0x80));
      value >>>= 7;
    }
    out.write((int) value);
  }

  private static void writeVarintField(OutputStream out, int field, long value) throws IOException {
    writeTag(out, field, 0);
    writeVarint(out, value);
  }

  private static void writeDouble(OutputStream out, int field, double value) throws IOException {
    writeTag(out, field, 1);
    out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(value).array());
  }

  private static void writeFloat(OutputStream out, int field, float value) throws IOException {
    writeTag(out, field, 5);
    out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(value).array());
  }

  private static void writePackedDoubles(OutputStream out, int field, double[] values) throws IOException {
    ByteBuffer packed = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
    for (double d : values) {
      packed.putDouble(d);
    }
    writeBytes(out, field, packed.array());
  }

  private static void writeBytes(OutputStream out, int field, byte[] bytes) throws IOException {
    writeTag(out, field, 2);
    writeVarint(out, bytes.length);
    out.write(bytes);
  }
}
