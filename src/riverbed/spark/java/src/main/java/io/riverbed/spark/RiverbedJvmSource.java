package io.riverbed.spark;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("riverbed-jvm")}: a DataSource V2 batch reader of Kafka topics,
 * through the Apache Kafka Java consumer only (no broker-specific call), with the rows,
 * options and errors of the Python {@code riverbed} source.
 *
 * <p>Planning (driver): one {@link OffsetRangePartition} per topic partition with records
 * in {@code [startingOffsets, endingOffsets)}, resolved by one consumer (metadata,
 * ListOffsets; under {@code kafka.isolation.level=read_committed} "latest" is the last
 * stable offset).  Reading (executors): {@link RangeReader}, one consumer per task,
 * assign + seek, columnar batches.
 *
 * <p>Streaming reads: {@link KafkaMicroBatchStream} (offsets as Spark's Kafka source's
 * JSON).  Writes ({@code df.write.mode("append")}, {@code writeStream}): {@link KafkaWrite}
 * with a Kafka Java producer, at-least-once.  Options naming no subscription
 * ({@code subscribe}/{@code subscribePattern}/{@code assign}) are a write's.
 */
public final class RiverbedJvmSource implements TableProvider, DataSourceRegister {

  @Override
  public String shortName() {
    return "riverbed-jvm";
  }

  static StructType schema(boolean includeHeaders) {
    StructType s =
        new StructType()
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("timestamp", DataTypes.TimestampType)
            .add("timestampType", DataTypes.IntegerType);
    if (includeHeaders) {
      StructType header =
          new StructType(
              new StructField[] {
                DataTypes.createStructField("key", DataTypes.StringType, true),
                DataTypes.createStructField("value", DataTypes.BinaryType, true)
              });
      s = s.add("headers", DataTypes.createArrayType(header, true));
    }
    return s;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return isSink(options) ? schema(false) : schema(SourceOptions.parse(options).includeHeaders);
  }

  /** Options naming no subscription are a write's ({@link SinkOptions}). */
  static boolean isSink(Map<String, String> options) {
    for (String key : options.keySet()) {
      String k = key.toLowerCase(java.util.Locale.ROOT);
      if (k.equals("subscribe") || k.equals("subscribepattern") || k.equals("assign")) {
        return false;
      }
    }
    return true;
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new KafkaTable(
        isSink(properties) ? null : SourceOptions.parse(properties), schema, properties);
  }

  /** The table of one read: its options, checked. */
  static final class KafkaTable implements Table, SupportsRead, SupportsWrite {
    private final SourceOptions options;
    private final StructType schema;
    private final Map<String, String> properties;

    KafkaTable(SourceOptions options, StructType schema, Map<String, String> properties) {
      this.options = options;
      this.schema = schema;
      this.properties = properties;
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new KafkaWrite(SinkOptions.parse(info.options()), info.schema());
    }

    @Override
    public String name() {
      return "riverbed-jvm";
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(
          TableCapability.BATCH_READ,
          TableCapability.MICRO_BATCH_READ,
          TableCapability.BATCH_WRITE,
          TableCapability.STREAMING_WRITE,
          TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
      return new Builder(options == null ? SourceOptions.parse(properties) : options, schema);
    }
  }

  /** Column pruning: only the columns the query uses are filled. */
  static final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private final SourceOptions options;
    private StructType schema;

    Builder(SourceOptions options, StructType schema) {
      this.options = options;
      this.schema = schema;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      schema = requiredSchema;
    }

    @Override
    public Scan build() {
      return new KafkaScan(options, schema);
    }
  }

  /** Scan and Batch: planning on the driver. */
  static final class KafkaScan implements Scan, Batch {
    private final SourceOptions options;
    private final StructType schema;

    KafkaScan(SourceOptions options, StructType schema) {
      this.options = options;
      this.schema = schema;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return "riverbed-jvm[" + options.subscribeKind + "]";
    }

    @Override
    public Batch toBatch() {
      options.checkBatch();
      return this;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return new KafkaMicroBatchStream(options, options.streamStart(), schema);
    }

    private InputPartition[] planned;

    /** Planned once per scan: Spark may ask more than once for the same query. */
    @Override
    public synchronized InputPartition[] planInputPartitions() {
      if (planned == null) {
        planned = Planner.plan(options).toArray(new InputPartition[0]);
      }
      return planned.clone();
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new RangeReader.Factory(options, schema);
    }
  }
}
