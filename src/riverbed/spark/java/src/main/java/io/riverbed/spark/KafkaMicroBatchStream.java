package io.riverbed.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;

/**
 * {@code spark.readStream.format("riverbed-jvm")}: micro-batches of offset ranges.
 *
 * <p>Driver side, per trigger: one Metadata request (the subscribed partitions now: topics
 * and partitions created since the last batch are picked up, read from their beginning)
 * and one ListOffsets (the end: high watermark, or the last stable offset under
 * {@code kafka.isolation.level=read_committed}); {@code maxOffsetsPerTrigger} caps a
 * batch, split over the partitions in proportion to what each has waiting.  Offsets are
 * {@link JsonOffset}s (Spark's Kafka source's JSON), so a restart from a checkpoint goes
 * on at the offsets of the last batch written to the offset log.  The ranges are read by
 * the batch reader's {@link RangeReader}s (pooled consumers, failOnDataLoss checks).
 * {@code commit} and {@code stop} have nothing to do: consumers are pooled, and no
 * consumer-group offsets are committed.  {@code Trigger.AvailableNow}: the ends when the
 * query starts are the last batch's ({@code maxOffsetsPerTrigger} still splits them).
 */
final class KafkaMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  private final SourceOptions options;
  private final SourceOptions.Spec startSpec;
  private final StructType schema;
  private volatile Map<TopicPartition, Long> availableNowEnd;

  KafkaMicroBatchStream(SourceOptions options, SourceOptions.Spec startSpec, StructType schema) {
    this.options = options;
    this.startSpec = startSpec;
    this.schema = schema;
  }

  @Override
  public Offset initialOffset() {
    return new JsonOffset(Planner.streamStart(options, startSpec));
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(start, limit) is used instead");
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    availableNowEnd = Planner.latest(options, java.util.Set.of()).ends;
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return options.maxOffsetsPerTrigger == null
        ? ReadLimit.allAvailable()
        : ReadLimit.maxRows(options.maxOffsetsPerTrigger);
  }

  @Override
  public Offset latestOffset(Offset startOffset, ReadLimit limit) {
    Map<TopicPartition, Long> start = ((JsonOffset) startOffset).offsets;
    Planner.Latest latest = Planner.latest(options, start.keySet());
    Map<TopicPartition, Long> from = new HashMap<>(latest.newPartitionStarts);
    from.putAll(start);
    Map<TopicPartition, Long> end = latest.ends;
    Map<TopicPartition, Long> target = availableNowEnd;
    if (target != null) {
      Map<TopicPartition, Long> bounded = new HashMap<>();
      for (Map.Entry<TopicPartition, Long> e : target.entrySet()) {
        bounded.put(e.getKey(), Math.min(e.getValue(), end.getOrDefault(e.getKey(), e.getValue())));
      }
      end = bounded;
    }
    if (limit instanceof ReadMaxRows) {
      end = cap(from, end, ((ReadMaxRows) limit).maxRows());
    }
    return new JsonOffset(end);
  }

  /** Cut {@code end} to at most {@code max} records past {@code from}, proportionally. */
  static Map<TopicPartition, Long> cap(
      Map<TopicPartition, Long> from, Map<TopicPartition, Long> end, long max) {
    long total = 0;
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      total += Math.max(0, e.getValue() - from.getOrDefault(e.getKey(), e.getValue()));
    }
    if (total <= max) {
      return end;
    }
    Map<TopicPartition, Long> out = new HashMap<>();
    long given = 0;
    TopicPartition firstWaiting = null;
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      long f = from.getOrDefault(e.getKey(), e.getValue());
      long waiting = Math.max(0, e.getValue() - f);
      if (waiting == 0) {
        out.put(e.getKey(), e.getValue());
        continue;
      }
      long share = (long) Math.floor((double) waiting * max / total);
      out.put(e.getKey(), f + share);
      given += share;
      if (firstWaiting == null) {
        firstWaiting = e.getKey();
      }
    }
    if (given == 0 && firstWaiting != null) { // always make progress
      long f = from.get(firstWaiting);
      out.put(firstWaiting, Math.min(end.get(firstWaiting), f + max));
    }
    return out;
  }

  @Override
  public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
    Map<TopicPartition, Long> start = ((JsonOffset) startOffset).offsets;
    Map<TopicPartition, Long> end = ((JsonOffset) endOffset).offsets;
    List<TopicPartition> unknown = new ArrayList<>();
    for (TopicPartition tp : end.keySet()) {
      if (!start.containsKey(tp)) {
        unknown.add(tp);
      }
    }
    Map<TopicPartition, Long> from = new HashMap<>(Planner.beginnings(options, unknown));
    from.putAll(start);
    List<InputPartition> ranges = new ArrayList<>();
    List<TopicPartition> order = new ArrayList<>(end.keySet());
    order.sort(
        (a, b) -> {
          int c = a.topic().compareTo(b.topic());
          return c != 0 ? c : Integer.compare(a.partition(), b.partition());
        });
    for (TopicPartition tp : order) {
      long f = from.get(tp);
      long until = end.get(tp);
      if (until < f) {
        Planner.dataLoss(options, tp + ": end offset " + until + " is before " + f);
      } else if (until > f) {
        ranges.add(new OffsetRangePartition(tp.topic(), tp.partition(), f, until));
      }
    }
    return ranges.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new RangeReader.Factory(options, schema);
  }

  @Override
  public Offset deserializeOffset(String json) {
    return JsonOffset.parse(json);
  }

  @Override
  public void commit(Offset end) {}

  @Override
  public void stop() {}

  @Override
  public String toString() {
    return "riverbed-jvm[" + options.subscribeKind + "]";
  }
}
