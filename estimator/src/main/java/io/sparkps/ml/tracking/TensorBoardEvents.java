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
 * file version, then scalar summaries ({@code Summary.Value.simple_value}) at their step and wall
 * time. The few fields written are encoded here by their field numbers (event.proto and
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
    ByteArrayOutputStream summary = new ByteArrayOutputStream();
    writeBytes(summary, SUMMARY_VALUE, v.toByteArray());
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

  private static void writeBytes(OutputStream out, int field, byte[] bytes) throws IOException {
    writeTag(out, field, 2);
    writeVarint(out, bytes.length);
    out.write(bytes);
  }
}
