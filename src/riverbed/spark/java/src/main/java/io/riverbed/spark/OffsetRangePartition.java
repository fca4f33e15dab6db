package io.riverbed.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One Spark input partition: the records {@code [from, until)} of one topic partition. */
final class OffsetRangePartition implements InputPartition {
  private static final long serialVersionUID = 1L;

  final String topic;
  final int partition;
  final long from;
  final long until;

  OffsetRangePartition(String topic, int partition, long from, long until) {
    this.topic = topic;
    this.partition = partition;
    this.from = from;
    this.until = until;
  }

  @Override
  public String toString() {
    return topic + "-" + partition + "[" + from + ", " + until + ")";
  }
}
