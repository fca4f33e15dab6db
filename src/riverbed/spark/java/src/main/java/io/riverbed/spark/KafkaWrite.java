package io.riverbed.spark;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code df.write.format("riverbed-jvm").mode("append")} and
 * {@code writeStream.format("riverbed-jvm")}: rows to Kafka through the Java producer.
 *
 * <p>Input columns, as the Python {@code riverbed} sink and Spark's Kafka sink:
 * {@code value} (binary or string, required), {@code key} (binary or string), {@code topic}
 * (string; the {@code topic} option overrides it), {@code partition} (int; else the
 * producer's partitioner), {@code headers} (array&lt;struct&lt;key:string,value:binary&gt;&gt;);
 * any other column is refused when the query starts, naming it.
 *
 * <p>At-least-once: each task sends its rows with a shared idempotent producer
 * ({@code acks=all}, {@link ProducerPool}) and {@code flush()}es before it reports
 * success; a send error fails the task.  A task Spark re-runs, or a micro-batch replayed
 * after a crash, produces its rows again: readers may see duplicates.  The driver-side
 * commit has nothing to do.
 */
final class KafkaWrite implements WriteBuilder, Write, BatchWrite, StreamingWrite {
  private final SinkOptions options;
  private final Columns columns;

  KafkaWrite(SinkOptions options, StructType schema) {
    this.options = options;
    this.columns = Columns.of(schema, options);
  }

  @Override
  public Write build() {
    return this;
  }

  @Override
  public String description() {
    return "riverbed-jvm sink";
  }

  @Override
  public BatchWrite toBatch() {
    return this;
  }

  @Override
  public StreamingWrite toStreaming() {
    return this;
  }

  @Override
  public Factory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new Factory(options, columns);
  }

  @Override
  public Factory createStreamingWriterFactory(PhysicalWriteInfo info) {
    return new Factory(options, columns);
  }

  @Override
  public boolean useCommitCoordinator() {
    return false;
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {}

  @Override
  public void abort(WriterCommitMessage[] messages) {}

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {}

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {}

  /** Where each known column is in the row (-1: absent) and whether it is a string. */
  static final class Columns implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final String HEADERS = "array<struct<key:string,value:binary>>";
    int key = -1;
    int value = -1;
    int topic = -1;
    int partition = -1;
    int headers = -1;
    boolean keyIsString;
    boolean valueIsString;

    static Columns of(StructType schema, SinkOptions options) {
      Map<String, DataType[]> allowed = new LinkedHashMap<>();
      DataType[] bytes = {DataTypes.BinaryType, DataTypes.StringType};
      allowed.put("key", bytes);
      allowed.put("value", bytes);
      allowed.put("topic", new DataType[] {DataTypes.StringType});
      allowed.put("partition", new DataType[] {DataTypes.IntegerType});
      allowed.put("headers", null);
      Columns c = new Columns();
      StructField[] fields = schema.fields();
      for (int i = 0; i < fields.length; i++) {
        String name = fields[i].name().toLowerCase(java.util.Locale.ROOT);
        DataType type = fields[i].dataType();
        if (!allowed.containsKey(name)) {
          throw SourceOptions.bad(
              "column '"
                  + fields[i].name()
                  + "' cannot be written to Kafka (allowed: "
                  + String.join(", ", allowed.keySet())
                  + ")");
        }
        boolean ok;
        String expected;
        if (name.equals("headers")) {
          ok = type.catalogString().equals(HEADERS);
          expected = HEADERS;
        } else {
          ok = false;
          StringBuilder names = new StringBuilder();
          for (DataType t : allowed.get(name)) {
            ok |= t.equals(type);
            names.append(names.length() == 0 ? "" : " or ").append(t.simpleString());
          }
          expected = names.toString();
        }
        if (!ok) {
          throw SourceOptions.bad(
              "column '"
                  + fields[i].name()
                  + "' has type "
                  + type.simpleString()
                  + "; expected "
                  + expected);
        }
        switch (name) {
          case "key":
            c.key = i;
            c.keyIsString = type.equals(DataTypes.StringType);
            break;
          case "value":
            c.value = i;
            c.valueIsString = type.equals(DataTypes.StringType);
            break;
          case "topic":
            c.topic = i;
            break;
          case "partition":
            c.partition = i;
            break;
          default:
            c.headers = i;
        }
      }
      if (c.value < 0) {
        throw SourceOptions.bad("a 'value' column is required to write to Kafka");
      }
      if (c.topic < 0 && options.topic == null) {
        throw SourceOptions.bad("set the 'topic' option or provide a 'topic' column");
      }
      return c;
    }
  }

  /** Sent to the executors: makes one {@link Writer} per task. */
  static final class Factory implements DataWriterFactory, StreamingDataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final SinkOptions options;
    private final Columns columns;

    Factory(SinkOptions options, Columns columns) {
      this.options = options;
      this.columns = columns;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Writer(options, columns);
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
      return new Writer(options, columns);
    }
  }

  /** One task's rows: sent as they come, flushed (and errors raised) in commit(). */
  static final class Writer implements DataWriter<InternalRow> {
    private final SinkOptions options;
    private final Columns c;
    private final Properties config;
    private final KafkaProducer<byte[], byte[]> producer;
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    private long sent;

    Writer(SinkOptions options, Columns columns) {
      this.options = options;
      this.c = columns;
      this.config = options.producerConfig();
      this.producer = ProducerPool.get(config);
    }

    private static byte[] bytes(InternalRow row, int at, boolean isString) {
      if (at < 0 || row.isNullAt(at)) {
        return null;
      }
      return isString ? row.getUTF8String(at).getBytes() : row.getBinary(at);
    }

    @Override
    public void write(InternalRow row) {
      check();
      String topic = options.topic;
      if (topic == null) {
        if (row.isNullAt(c.topic)) {
          throw new IllegalStateException("row with a null topic and no 'topic' option");
        }
        topic = row.getUTF8String(c.topic).toString();
      }
      Integer partition =
          c.partition < 0 || row.isNullAt(c.partition) ? null : row.getInt(c.partition);
      RecordHeaders headers = null;
      if (c.headers >= 0 && !row.isNullAt(c.headers)) {
        headers = new RecordHeaders();
        ArrayData array = row.getArray(c.headers);
        for (int i = 0; i < array.numElements(); i++) {
          if (array.isNullAt(i)) {
            continue;
          }
          InternalRow h = array.getStruct(i, 2);
          String key = h.isNullAt(0) ? "" : h.getUTF8String(0).toString();
          headers.add(key, h.isNullAt(1) ? null : h.getBinary(1));
        }
      }
      ProducerRecord<byte[], byte[]> record =
          new ProducerRecord<>(
              topic,
              partition,
              null,
              bytes(row, c.key, c.keyIsString),
              bytes(row, c.value, c.valueIsString),
              headers);
      producer.send(
          record,
          (metadata, error) -> {
            if (error != null) {
              failure.compareAndSet(null, error);
            }
          });
      sent++;
    }

    private void check() {
      Exception error = failure.get();
      if (error != null) {
        ProducerPool.invalidate(config, producer);
        throw new IllegalStateException("delivery failed: " + error, error);
      }
    }

    @Override
    public WriterCommitMessage commit() {
      producer.flush();
      check();
      return new Committed(sent);
    }

    @Override
    public void abort() {}

    @Override
    public void close() {}
  }

  /** What a task reports: how many rows it sent. */
  static final class Committed implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final long rows;

    Committed(long rows) {
      this.rows = rows;
    }
  }
}
