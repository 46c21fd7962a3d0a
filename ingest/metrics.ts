import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The worker's Prometheus metrics, on a registry of its own so two workers in one process stay apart. */
export function createIngestMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ingest_' });
  return {
    registry,
    consumed: new Counter({
      name: 'ingest_events_consumed_total',
      help: 'Events read from Kafka (array elements counted one by one)',
      labelNames: ['source'],
      registers: [registry],
    }),
    canonical: new Counter({
      name: 'ingest_messages_canonical_total',
      help: 'Messages in canonical form, written to their bulk lines without JSON.parse (ingest/canonical-event.ts)',
      labelNames: ['source'],
      registers: [registry],
    }),
    indexed: new Counter({ name: 'ingest_events_indexed_total', help: 'Events acknowledged by Elasticsearch', labelNames: ['source'], registers: [registry] }),
    deadLettered: new Counter({
      name: 'ingest_events_dead_lettered_total',
      help: 'Events sent to the dead-letter topic, by reason',
      labelNames: ['source', 'reason'],
      registers: [registry],
    }),
    retries: new Counter({
      name: 'ingest_bulk_retries_total',
      help: 'Bulk attempts repeated because Elasticsearch was unavailable or overloaded',
      labelNames: ['source', 'cause'],
      registers: [registry],
    }),
    undecodableBatches: new Counter({
      name: 'ingest_undecodable_batches_total',
      help: 'Kafka record batches that could not be decompressed or decoded (corrupt, or an unknown codec), dead-lettered as undecodable_batch',
      labelNames: ['source', 'codec'],
      registers: [registry],
    }),
    deferredBatches: new Counter({
      name: 'ingest_batches_deferred_total',
      help: 'Fetched partition batches cut short because decompressing more would exceed INGEST_MEMORY_BUDGET_BYTES; the rest is fetched again',
      labelNames: ['source'],
      registers: [registry],
    }),
    typeConflicts: new Counter({
      name: 'ingest_type_conflicts_total',
      help: 'Metadata fields set aside unindexed because their type clashed with the mapping',
      labelNames: ['source'],
      registers: [registry],
    }),
    bulkSlotsIdle: new Counter({
      name: 'ingest_bulk_slots_idle_seconds_total',
      help: 'Time with no bulk request in flight since the first write (added as the next one starts): Elasticsearch had nothing of ours to index',
      registers: [registry],
    }),
    bulkSlotWait: new Counter({
      name: 'ingest_bulk_slot_wait_seconds_total',
      help: 'Time full bulks waited for one of the INGEST_BULK_MAX_IN_FLIGHT slots, summed over bulks',
      registers: [registry],
    }),
    fetchWait: new Counter({
      name: 'ingest_fetch_wait_seconds_total',
      help: 'Time the fetch loop waited for queued chunks to be written (backpressure), summed over partitions consumed concurrently',
      registers: [registry],
    }),
    bulkDuration: new Histogram({
      name: 'ingest_bulk_duration_seconds',
      help: 'Duration of Elasticsearch bulk requests',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: 'ingest_consumer_lag',
      help: 'Messages in the partition not yet committed by the consumer group, read from Kafka every INGEST_LAG_POLL_MS',
      labelNames: ['topic', 'partition'],
      registers: [registry],
    }),
    retentionRuns: new Counter({ name: 'ingest_retention_runs_total', help: 'Retention runs, by outcome', labelNames: ['outcome'], registers: [registry] }),
    retentionDeleted: new Counter({
      name: 'ingest_retention_deleted_indices_total',
      help: 'Partitions (and legacy indices) deleted by retention because their newest possible event is older than the source keeps',
      labelNames: ['source'],
      registers: [registry],
    }),
    partitionsCreatedAhead: new Counter({
      name: 'ingest_partitions_created_ahead_total',
      help: 'Partitions created ahead of their period (PARTITION_PRECREATE_SECONDS), so no search meets one being created',
      labelNames: ['source'],
      registers: [registry],
    }),
    heldPartitions: new Gauge({
      name: 'ingest_partitions_held',
      help: 'Partitions whose consumption is paused while Elasticsearch is retried',
      registers: [registry],
    }),
  };
}

export type IngestMetrics = ReturnType<typeof createIngestMetrics>;
