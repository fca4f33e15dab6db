package io.riverbed.spark;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver-side planning: the subscribed partitions (one Metadata request) and their
 * concrete start/end offsets (ListOffsets via {@code beginningOffsets}/{@code endOffsets}/
 * {@code offsetsForTimes}), with the Python source's rules: JSON offsets must name exactly
 * the subscribed partitions; an end before its start is data loss (fail, or skip the
 * partition with a warning under failOnDataLoss=false); empty ranges get no task.
 */
final class Planner {
  static final Logger LOG = LoggerFactory.getLogger("riverbed.spark");

  private Planner() {}

  static List<OffsetRangePartition> plan(SourceOptions options) {
    return withConsumer(
        options,
        (consumer, timeout) -> {
          TreeSet<TopicPartition> current = partitions(consumer, options, timeout);
          Map<TopicPartition, Long> start =
              resolve(consumer, options, options.starting, current, true);
          Map<TopicPartition, Long> end = resolve(consumer, options, options.ending, current, false);
          List<OffsetRangePartition> ranges = new ArrayList<>();
          for (TopicPartition tp : current) {
            long from = start.get(tp);
            long until = end.get(tp);
            if (until < from) {
              dataLoss(
                  options,
                  tp + ": endingOffsets " + until + " is before startingOffsets " + from);
            } else if (until > from) {
              ranges.add(new OffsetRangePartition(tp.topic(), tp.partition(), from, until));
            }
          }
          return ranges;
        });
  }

  /** The consumer work of one driver-side step, with a pooled consumer. */
  private interface Step<T> {
    T run(KafkaConsumer<ByteBuffer, ByteBuffer> consumer, Duration timeout);
  }

  private static <T> T withConsumer(SourceOptions options, Step<T> step) {
    java.util.Properties config = options.consumerConfig();
    KafkaConsumer<ByteBuffer, ByteBuffer> consumer = ConsumerPool.borrow(config);
    boolean ok = false;
    try {
      T out = step.run(consumer, Duration.ofMillis(options.pollTimeoutMs));
      ok = true;
      return out;
    } catch (org.apache.kafka.common.errors.TimeoutException ex) {
      throw new IllegalStateException(
          "no answer from kafka.bootstrap.servers="
              + options.kafkaParams.get("bootstrap.servers")
              + " within kafkaConsumer.pollTimeoutMs="
              + options.pollTimeoutMs
              + " ("
              + ex.getMessage()
              + ")");
    } finally {
      if (ok) {
        ConsumerPool.giveBack(config, consumer);
      } else {
        ConsumerPool.closeQuietly(consumer);
      }
    }
  }

  /** A streaming read's first offsets: {@code spec} on the partitions subscribed now. */
  static Map<TopicPartition, Long> streamStart(SourceOptions options, SourceOptions.Spec spec) {
    return withConsumer(
        options,
        (consumer, timeout) ->
            resolve(consumer, options, spec, partitions(consumer, options, timeout), true));
  }

  /** A trigger's end offsets, and where partitions unknown to the last batch begin. */
  static final class Latest {
    final Map<TopicPartition, Long> ends;
    final Map<TopicPartition, Long> newPartitionStarts;

    Latest(Map<TopicPartition, Long> ends, Map<TopicPartition, Long> newPartitionStarts) {
      this.ends = ends;
      this.newPartitionStarts = newPartitionStarts;
    }
  }

  static Latest latest(SourceOptions options, java.util.Set<TopicPartition> known) {
    return withConsumer(
        options,
        (consumer, timeout) -> {
          TreeSet<TopicPartition> now = partitions(consumer, options, timeout);
          Map<TopicPartition, Long> ends = new HashMap<>(consumer.endOffsets(now, timeout));
          List<TopicPartition> fresh = new ArrayList<>();
          for (TopicPartition tp : now) {
            if (!known.contains(tp)) {
              fresh.add(tp);
            }
          }
          Map<TopicPartition, Long> starts = new HashMap<>();
          if (!fresh.isEmpty()) {
            starts.putAll(consumer.beginningOffsets(fresh, timeout));
          }
          return new Latest(ends, starts);
        });
  }

  /** The log start offsets of {@code partitions} (none: no request). */
  static Map<TopicPartition, Long> beginnings(
      SourceOptions options, List<TopicPartition> partitions) {
    if (partitions.isEmpty()) {
      return new HashMap<>();
    }
    return withConsumer(
        options, (consumer, timeout) -> new HashMap<>(consumer.beginningOffsets(partitions, timeout)));
  }

  /** Fail with {@code message} under failOnDataLoss=true; otherwise log it and go on. */
  static void dataLoss(SourceOptions options, String message) {
    if (options.failOnDataLoss) {
      throw new IllegalStateException(
          message + "; some records may have been lost. Set failOnDataLoss=false to skip");
    }
    LOG.warn("{}; skipping (failOnDataLoss=false)", message);
  }

  private static TreeSet<TopicPartition> partitions(
      KafkaConsumer<ByteBuffer, ByteBuffer> consumer, SourceOptions options, Duration timeout) {
    TreeSet<TopicPartition> out =
        new TreeSet<>(
            (a, b) -> {
              int c = a.topic().compareTo(b.topic());
              return c != 0 ? c : Integer.compare(a.partition(), b.partition());
            });
    if (options.assigned != null) {
      for (Map.Entry<String, TreeSet<Integer>> t : options.assigned.entrySet()) {
        for (int p : t.getValue()) {
          out.add(new TopicPartition(t.getKey(), p));
        }
      }
      return out;
    }
    if (options.topics != null) {
      for (String topic : options.topics) {
        List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
        for (PartitionInfo info : infos == null ? List.<PartitionInfo>of() : infos) {
          out.add(new TopicPartition(topic, info.partition()));
        }
      }
    } else {
      Map<String, List<PartitionInfo>> topics = consumer.listTopics(timeout);
      Pattern regex = Pattern.compile(options.pattern);
      for (Map.Entry<String, List<PartitionInfo>> t : topics.entrySet()) {
        if (!t.getKey().startsWith("__") && regex.matcher(t.getKey()).matches()) {
          for (PartitionInfo info : t.getValue()) {
            out.add(new TopicPartition(t.getKey(), info.partition()));
          }
        }
      }
    }
    return out;
  }

  private static Map<TopicPartition, Long> resolve(
      KafkaConsumer<ByteBuffer, ByteBuffer> consumer,
      SourceOptions options,
      SourceOptions.Spec spec,
      TreeSet<TopicPartition> partitions,
      boolean start) {
    Duration timeout = Duration.ofMillis(options.pollTimeoutMs);
    String name = start ? "startingOffsets" : "endingOffsets";
    Map<TopicPartition, Long> out = new HashMap<>();
    switch (spec.kind) {
      case EARLIEST:
        out.putAll(consumer.beginningOffsets(partitions, timeout));
        return out;
      case LATEST:
        out.putAll(consumer.endOffsets(partitions, timeout));
        return out;
      case OFFSETS:
        {
          Map<TopicPartition, Long> wanted = flatten(spec.values);
          checkSame(name, wanted, partitions);
          List<TopicPartition> early = new ArrayList<>();
          List<TopicPartition> late = new ArrayList<>();
          for (Map.Entry<TopicPartition, Long> e : wanted.entrySet()) {
            if (e.getValue() == SourceOptions.EARLIEST) {
              early.add(e.getKey());
            } else if (e.getValue() == SourceOptions.LATEST) {
              late.add(e.getKey());
            } else {
              out.put(e.getKey(), e.getValue());
            }
          }
          if (!early.isEmpty()) {
            out.putAll(consumer.beginningOffsets(early, timeout));
          }
          if (!late.isEmpty()) {
            out.putAll(consumer.endOffsets(late, timeout));
          }
          return out;
        }
      case GLOBAL_TIMESTAMP:
        {
          Map<TopicPartition, Long> wanted = new HashMap<>();
          for (TopicPartition tp : partitions) {
            wanted.put(tp, spec.timestamp);
          }
          return byTimestamp(consumer, options, wanted, start, timeout);
        }
      default:
        {
          Map<TopicPartition, Long> wanted = flatten(spec.values);
          checkSame(name + "ByTimestamp", wanted, partitions);
          return byTimestamp(consumer, options, wanted, start, timeout);
        }
    }
  }

  private static Map<TopicPartition, Long> byTimestamp(
      KafkaConsumer<ByteBuffer, ByteBuffer> consumer,
      SourceOptions options,
      Map<TopicPartition, Long> timestamps,
      boolean start,
      Duration timeout) {
    Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(timestamps, timeout);
    TreeMap<String, TopicPartition> missing = new TreeMap<>();
    Map<TopicPartition, Long> out = new HashMap<>();
    for (TopicPartition tp : timestamps.keySet()) {
      OffsetAndTimestamp at = found.get(tp);
      if (at == null) {
        missing.put(String.format("%s-%010d", tp.topic(), tp.partition()), tp);
      } else {
        out.put(tp, at.offset());
      }
    }
    if (!missing.isEmpty() && start && !options.timestampStrategyLatest) {
      List<String> names = new ArrayList<>();
      for (TopicPartition tp : missing.values()) {
        names.add(tp.toString());
      }
      throw SourceOptions.bad(
          "no record at or after the starting timestamp in "
              + String.join(", ", names)
              + " (set startingOffsetsByTimestampStrategy=latest to start at the end)");
    }
    if (!missing.isEmpty()) {
      out.putAll(consumer.endOffsets(missing.values(), timeout));
    }
    return out;
  }

  private static Map<TopicPartition, Long> flatten(TreeMap<String, TreeMap<Integer, Long>> values) {
    Map<TopicPartition, Long> out = new HashMap<>();
    for (Map.Entry<String, TreeMap<Integer, Long>> t : values.entrySet()) {
      for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
        out.put(new TopicPartition(t.getKey(), p.getKey()), p.getValue());
      }
    }
    return out;
  }

  private static void checkSame(
      String option, Map<TopicPartition, Long> named, TreeSet<TopicPartition> actual) {
    TreeSet<TopicPartition> missing = new TreeSet<>(actual.comparator());
    TreeSet<TopicPartition> unknown = new TreeSet<>(actual.comparator());
    for (TopicPartition tp : actual) {
      if (!named.containsKey(tp)) {
        missing.add(tp);
      }
    }
    for (TopicPartition tp : named.keySet()) {
      if (!actual.contains(tp)) {
        unknown.add(tp);
      }
    }
    if (!missing.isEmpty() || !unknown.isEmpty()) {
      throw SourceOptions.bad(
          option
              + " must name exactly the subscribed partitions: missing "
              + show(missing)
              + "; unknown "
              + show(unknown));
    }
  }

  private static String show(TreeSet<TopicPartition> tps) {
    if (tps.isEmpty()) {
      return "none";
    }
    List<String> names = new ArrayList<>();
    for (TopicPartition tp : tps) {
      names.add(tp.toString());
    }
    return String.join(", ", names);
  }
}
