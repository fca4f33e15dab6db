package io.riverbed.spark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one {@link OffsetRangePartition} into columnar batches of up to {@link #CAPACITY}
 * rows of the columns Spark asked for: one KafkaConsumer from {@link ConsumerPool} (assign + seek, no group, no commits;
 * given back when the task ends cleanly, closed after an error), polled until its position
 * reaches the range end.  Keys and values are copied once, from the fetched bytes
 * (ByteBufferDeserializer: views, no per-record arrays) into Spark's on-heap column
 * vectors; topic and partition are constant vectors.
 *
 * <p>Under read_committed the consumer returns no aborted record and skips control
 * records; the position (not the last record) says when the range is done.  A start
 * below the log start offset (records deleted after planning) is data loss: fail, or skip
 * to the log start with a warning (failOnDataLoss=false).  No progress for
 * kafkaConsumer.pollTimeoutMs fails the task naming the partition and offsets.
 */
final class RangeReader implements PartitionReader<ColumnarBatch> {
  static final int CAPACITY = 8192;
  private static final Duration POLL = Duration.ofMillis(200);

  /** Created on the driver, serialized to the executors. */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final SourceOptions options;
    private final StructType readSchema;

    Factory(SourceOptions options, StructType readSchema) {
      this.options = options;
      this.readSchema = readSchema;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new RangeReader(options, readSchema, (OffsetRangePartition) partition);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("riverbed-jvm reads columnar batches only");
    }
  }

  private final SourceOptions options;
  private final OffsetRangePartition range;
  private final TopicPartition tp;
  private final java.util.Properties config;
  private final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
  private boolean failed;
  // The columns Spark asked for (pruneColumns); null when not read.
  private final WritableColumnVector key;
  private final WritableColumnVector value;
  private final WritableColumnVector offset;
  private final WritableColumnVector timestamp;
  private final WritableColumnVector timestampType;
  private final WritableColumnVector headers;
  private final WritableColumnVector[] writable;
  private final ColumnarBatch batch;
  private byte[] scratch = new byte[0];
  private Iterator<ConsumerRecord<ByteBuffer, ByteBuffer>> pending = Collections.emptyIterator();
  private long position;
  private boolean done;

  RangeReader(SourceOptions options, StructType readSchema, OffsetRangePartition range) {
    this.options = options;
    this.range = range;
    this.tp = new TopicPartition(range.topic, range.partition);
    String[] names = readSchema.fieldNames();
    ColumnVector[] columns = new ColumnVector[names.length];
    WritableColumnVector k = null, v = null, o = null, ts = null, tt = null, h = null;
    List<WritableColumnVector> owned = new java.util.ArrayList<>();
    for (int i = 0; i < names.length; i++) {
      DataType type = readSchema.fields()[i].dataType();
      switch (names[i]) {
        case "topic":
          ConstantColumnVector topic = new ConstantColumnVector(CAPACITY, type);
          topic.setUtf8String(UTF8String.fromString(range.topic));
          columns[i] = topic;
          continue;
        case "partition":
          ConstantColumnVector partition = new ConstantColumnVector(CAPACITY, type);
          partition.setInt(range.partition);
          columns[i] = partition;
          continue;
        default:
          break;
      }
      WritableColumnVector vector = new OnHeapColumnVector(CAPACITY, type);
      owned.add(vector);
      columns[i] = vector;
      switch (names[i]) {
        case "key" -> k = vector;
        case "value" -> v = vector;
        case "offset" -> o = vector;
        case "timestamp" -> ts = vector;
        case "timestampType" -> tt = vector;
        case "headers" -> h = vector;
        default -> throw new IllegalStateException("riverbed-jvm has no column " + names[i]);
      }
    }
    key = k;
    value = v;
    offset = o;
    timestamp = ts;
    timestampType = tt;
    headers = h;
    writable = owned.toArray(new WritableColumnVector[0]);
    batch = new ColumnarBatch(columns);
    config = options.consumerConfig();
    consumer = ConsumerPool.borrow(config);
    consumer.assign(List.of(tp));
    consumer.seek(tp, range.from);
    position = range.from;
  }

  /** Copies {@code data} (a view of the fetched bytes, not a copy) into row {@code row}. */
  private void putBytes(WritableColumnVector vector, int row, ByteBuffer data) {
    if (data == null) {
      vector.putNull(row);
    } else if (data.hasArray()) {
      vector.putByteArray(row, data.array(), data.arrayOffset() + data.position(), data.remaining());
    } else {
      int n = data.remaining();
      if (scratch.length < n) {
        scratch = new byte[Math.max(n, scratch.length * 2)];
      }
      data.duplicate().get(scratch, 0, n);
      vector.putByteArray(row, scratch, 0, n);
    }
  }

  @Override
  public boolean next() {
    failed = true; // until this call returns normally
    for (WritableColumnVector vector : writable) {
      vector.reset();
    }
    int rows = 0;
    int headerCount = 0;
    while (rows < CAPACITY && !done) {
      if (!pending.hasNext()) {
        if (position >= range.until) {
          done = true;
          break;
        }
        pending = poll().iterator();
        continue;
      }
      ConsumerRecord<ByteBuffer, ByteBuffer> r = pending.next();
      if (r.offset() >= range.until) {
        done = true;
        break;
      }
      if (key != null) {
        putBytes(key, rows, r.key());
      }
      if (value != null) {
        putBytes(value, rows, r.value());
      }
      if (offset != null) {
        offset.putLong(rows, r.offset());
      }
      TimestampType type = r.timestampType();
      if (timestamp != null) {
        // NO_TIMESTAMP_TYPE records carry -1 ms, shown as -1000 us like the Python source
        timestamp.putLong(rows, Math.multiplyExact(r.timestamp(), 1000L));
      }
      if (timestampType != null) {
        timestampType.putInt(
            rows,
            type == TimestampType.NO_TIMESTAMP_TYPE
                ? -1
                : type == TimestampType.CREATE_TIME ? 0 : 1);
      }
      if (headers != null) {
        headerCount = putHeaders(rows, r.headers(), headerCount);
      }
      position = r.offset() + 1;
      rows++;
    }
    batch.setNumRows(rows);
    failed = false;
    return rows > 0;
  }

  private int putHeaders(int row, Headers recordHeaders, int at) {
    Header[] all = recordHeaders.toArray();
    if (all.length == 0) {
      headers.putNull(row);
      return at;
    }
    WritableColumnVector struct = headers.arrayData();
    WritableColumnVector hk = struct.getChild(0);
    WritableColumnVector hv = struct.getChild(1);
    int needed = at + all.length; // reserve() grows only when needed, doubling
    struct.reserve(needed);
    hk.reserve(needed);
    hv.reserve(needed);
    headers.putArray(row, at, all.length);
    for (Header h : all) {
      struct.putNotNull(at);
      hk.putByteArray(at, h.key().getBytes(StandardCharsets.UTF_8));
      byte[] hvalue = h.value();
      if (hvalue == null) {
        hv.putNull(at);
      } else {
        hv.putByteArray(at, hvalue);
      }
      at++;
    }
    return at;
  }

  /** One poll; advances {@link #position} past what the consumer skipped (markers, aborts). */
  private List<ConsumerRecord<ByteBuffer, ByteBuffer>> poll() {
    long deadline = System.nanoTime() + options.pollTimeoutMs * 1_000_000L;
    while (true) {
      ConsumerRecords<ByteBuffer, ByteBuffer> records;
      try {
        records = consumer.poll(POLL);
      } catch (OffsetOutOfRangeException ex) {
        long logStart = consumer.beginningOffsets(List.of(tp)).get(tp);
        String lost =
            logStart > position ? "[" + position + ", " + logStart + ")" : "from offset " + position;
        Planner.dataLoss(
            options,
            tp
                + ": records "
                + lost
                + " were deleted before the query read them (log start offset "
                + logStart
                + ")");
        position = Math.max(position, logStart);
        if (position >= range.until) {
          return List.of();
        }
        consumer.seek(tp, position);
        continue;
      }
      List<ConsumerRecord<ByteBuffer, ByteBuffer>> got = records.records(tp);
      if (!got.isEmpty()) {
        return got;
      }
      long at = consumer.position(tp);
      if (at > position) {
        position = at; // only control records or aborted data in between
        return List.of();
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            tp
                + ": no record at offset "
                + position
                + " within kafkaConsumer.pollTimeoutMs="
                + options.pollTimeoutMs
                + " (range ["
                + range.from
                + ", "
                + range.until
                + "))");
      }
    }
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  @Override
  public void close() {
    if (failed) {
      ConsumerPool.closeQuietly(consumer);
    } else {
      ConsumerPool.giveBack(config, consumer);
    }
    batch.close();
  }
}
