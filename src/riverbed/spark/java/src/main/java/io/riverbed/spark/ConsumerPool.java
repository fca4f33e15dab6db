package io.riverbed.spark;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * Idle KafkaConsumers of this JVM (driver or executor), kept for the next task or query
 * with the same consumer settings, as Spark's own Kafka source does: a consumer's start
 * (threads, connection, ApiVersions, Metadata) costs more than reading a small range.
 *
 * <p>A task borrows one ({@link #borrow}), uses it alone, and gives it back
 * ({@link #giveBack}) with no partition assigned (which drops its fetched-but-unread
 * records), or closes it after an error.  Consumers idle longer than {@link #IDLE} are
 * closed at the next borrow; at most {@link #MAX_IDLE} idle ones are kept per setting.
 * Thread-safe (one lock; a consumer is only ever used by the thread that borrowed it).
 */
final class ConsumerPool {
  static final Duration IDLE = Duration.ofMinutes(2);
  static final int MAX_IDLE = 8;

  private static final class Idle {
    final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
    final long since;

    Idle(KafkaConsumer<ByteBuffer, ByteBuffer> consumer, long since) {
      this.consumer = consumer;
      this.since = since;
    }
  }

  private static final Map<String, ArrayDeque<Idle>> POOL = new HashMap<>();

  private ConsumerPool() {}

  static String key(Properties config) {
    return new TreeMap<>(config).toString();
  }

  static KafkaConsumer<ByteBuffer, ByteBuffer> borrow(Properties config) {
    String key = key(config);
    long now = System.nanoTime();
    KafkaConsumer<ByteBuffer, ByteBuffer> found = null;
    List<KafkaConsumer<ByteBuffer, ByteBuffer>> stale = new java.util.ArrayList<>();
    synchronized (POOL) {
      for (ArrayDeque<Idle> idle : POOL.values()) {
        for (Iterator<Idle> it = idle.iterator(); it.hasNext(); ) {
          Idle entry = it.next();
          if (now - entry.since > IDLE.toNanos()) {
            stale.add(entry.consumer);
            it.remove();
          }
        }
      }
      ArrayDeque<Idle> idle = POOL.get(key);
      if (idle != null && !idle.isEmpty()) {
        found = idle.pollLast().consumer;
      }
    }
    for (KafkaConsumer<ByteBuffer, ByteBuffer> consumer : stale) {
      closeQuietly(consumer);
    }
    return found != null ? found : new KafkaConsumer<>(config);
  }

  static void giveBack(Properties config, KafkaConsumer<ByteBuffer, ByteBuffer> consumer) {
    try {
      consumer.assign(List.of());
    } catch (RuntimeException ex) {
      closeQuietly(consumer);
      return;
    }
    KafkaConsumer<ByteBuffer, ByteBuffer> extra = null;
    synchronized (POOL) {
      ArrayDeque<Idle> idle = POOL.computeIfAbsent(key(config), k -> new ArrayDeque<>());
      idle.addLast(new Idle(consumer, System.nanoTime()));
      if (idle.size() > MAX_IDLE) {
        extra = idle.pollFirst().consumer;
      }
    }
    if (extra != null) {
      closeQuietly(extra);
    }
  }

  static void closeQuietly(KafkaConsumer<ByteBuffer, ByteBuffer> consumer) {
    try {
      consumer.close(Duration.ZERO);
    } catch (RuntimeException ignored) {
      // closing is best effort
    }
  }
}
