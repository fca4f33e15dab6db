package dev.riverbed.share;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One share group member with explicit acknowledgement.
 *
 * <p>Arguments: bootstrap group topic idle_polls max_seconds release_suffix reject_suffix
 * [poll_pause_ms]. Per record: a value ending in reject_suffix is REJECTed, one ending in
 * release_suffix is RELEASEd on its first delivery (ACCEPTed after), any other ACCEPTed.
 * Prints one JSON line per delivery; exits after idle_polls empty polls in a row once a
 * record was seen (or after max_seconds).
 */
public final class ShareConsumerApp {
  private ShareConsumerApp() {}

  public static void main(String[] args) {
    String bootstrap = args[0];
    String group = args[1];
    String topic = args[2];
    int idlePolls = Integer.parseInt(args[3]);
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[4]);
    String releaseSuffix = args[5];
    String rejectSuffix = args[6];
    long pauseMs = args.length > 7 ? Long.parseLong(args[7]) : 0L;

    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("group.id", group);
    props.put("share.acknowledgement.mode", "explicit");
    props.put("max.poll.records", "5");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());

    boolean seen = false;
    int idle = 0;
    try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      System.out.println("{\"event\": \"subscribed\"}");
      System.out.flush();
      while (System.currentTimeMillis() < deadline && (!seen || idle < idlePolls)) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
        if (records.isEmpty()) {
          idle++;
          continue;
        }
        seen = true;
        idle = 0;
        StringBuilder out = new StringBuilder();
        for (ConsumerRecord<String, String> r : records) {
          String value = r.value() == null ? "" : r.value();
          int count = r.deliveryCount().map(Short::intValue).orElse(-1);
          AcknowledgeType type;
          if (value.endsWith(rejectSuffix)) {
            type = AcknowledgeType.REJECT;
          } else if (value.endsWith(releaseSuffix) && count <= 1) {
            type = AcknowledgeType.RELEASE;
          } else {
            type = AcknowledgeType.ACCEPT;
          }
          consumer.acknowledge(r, type);
          out.append("{\"partition\": ").append(r.partition())
              .append(", \"offset\": ").append(r.offset())
              .append(", \"value\": \"").append(value.replace("\\", "\\\\").replace("\"", "\\\""))
              .append("\", \"delivery_count\": ").append(count)
              .append(", \"action\": \"").append(type.name()).append("\"}\n");
        }
        consumer.commitSync(Duration.ofSeconds(30));
        System.out.print(out);
        System.out.flush();
        if (pauseMs > 0) {
          Thread.sleep(pauseMs);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    System.out.println("{\"event\": \"closed\"}");
    System.out.flush();
  }
}
