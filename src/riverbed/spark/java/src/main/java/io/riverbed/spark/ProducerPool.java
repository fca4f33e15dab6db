package io.riverbed.spark;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * One shared Kafka producer per producer configuration in this JVM (driver or executor),
 * as Spark's Kafka sink caches its producers: a fresh idempotent producer first waits for
 * its producer id and metadata, a kept one does not.  {@link KafkaProducer} is
 * thread-safe, so concurrent tasks share it; each task tracks its own sends' errors.  A
 * producer that reported an error is closed and dropped ({@link #invalidate}); the next
 * task gets a fresh one.  Producers live as long as the JVM.
 */
final class ProducerPool {
  private static final Map<String, KafkaProducer<byte[], byte[]>> POOL = new ConcurrentHashMap<>();

  private ProducerPool() {}

  static String key(Properties config) {
    return new TreeMap<>(config).toString();
  }

  static KafkaProducer<byte[], byte[]> get(Properties config) {
    return POOL.computeIfAbsent(key(config), k -> new KafkaProducer<>(config));
  }

  static void invalidate(Properties config, KafkaProducer<byte[], byte[]> producer) {
    if (POOL.remove(key(config), producer)) {
      try {
        producer.close(java.time.Duration.ZERO);
      } catch (RuntimeException ignored) {
        // already failed
      }
    }
  }
}
