package org.apache.kafka.common.utils;

/**
 * Compatibility shim: Debezium 3.6.1.Final (built against Kafka 4.1) calls
 * {@code org.apache.kafka.common.utils.Sanitizer}, which Kafka 4.4.0 moved to
 * {@code org.apache.kafka.common.utils.internals.Sanitizer}; without it the connector's task
 * fails at start with NoClassDefFoundError while naming its JMX metrics.  Same methods,
 * delegating to the moved class.
 */
public class Sanitizer {
    public static String sanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.sanitize(name);
    }

    public static String desanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.desanitize(name);
    }

    public static String jmxSanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.jmxSanitize(name);
    }
}
