package io.riverbed.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A streaming read's position: the next offset to read of every partition, serialised (in
 * the checkpoint's offset log) as Spark's Kafka source does: {@code {"topic":{"0":123}}},
 * topics and partitions sorted.  Immutable.
 */
final class JsonOffset extends Offset {
  private static final ObjectMapper JSON = new ObjectMapper();

  final Map<TopicPartition, Long> offsets;

  JsonOffset(Map<TopicPartition, Long> offsets) {
    this.offsets = Collections.unmodifiableMap(new HashMap<>(offsets));
  }

  @Override
  public String json() {
    TreeMap<String, TreeMap<Integer, Long>> sorted = new TreeMap<>();
    for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
      sorted
          .computeIfAbsent(e.getKey().topic(), t -> new TreeMap<>())
          .put(e.getKey().partition(), e.getValue());
    }
    ObjectNode root = JSON.createObjectNode();
    for (Map.Entry<String, TreeMap<Integer, Long>> t : sorted.entrySet()) {
      ObjectNode parts = root.putObject(t.getKey());
      for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
        parts.put(String.valueOf(p.getKey()), p.getValue());
      }
    }
    return root.toString();
  }

  /** Parse {@link #json()}'s form (an offset log entry). */
  static JsonOffset parse(String json) {
    Map<TopicPartition, Long> out = new HashMap<>();
    for (Map.Entry<String, TreeMap<Integer, Long>> t :
        SourceOptions.offsetsJson(json, "offset log entry").entrySet()) {
      for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
        out.put(new TopicPartition(t.getKey(), p.getKey()), p.getValue());
      }
    }
    return new JsonOffset(out);
  }
}
