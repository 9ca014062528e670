/* wire: the msgpack formats that cross process boundaries.
 *
 * Worker payload (worker -> scheduler, in worker.metrics["roastcoffea"] on
 * each heartbeat and as the reply to a flush):
 *
 *   map {
 *     "v": 1,
 *     "inc": str,          worker incarnation (Worker.id)
 *     "seq": uint,         payload number, 1, 2, ... per incarnation
 *     "since": uint,       changes of payloads since+1 .. seq are included
 *     "full": bool,        true: every digest is included (a flush)
 *     "digests": [[context, span, prefix, activity, unit, value], ...]
 *                          strings ("" when absent); value is the cumulative
 *                          Worker.digests_total entry (int or float)
 *   }
 *
 * (Instrumentation records travel on the worker's event stream instead; a
 * "records" key of an earlier build is ignored like any unknown key.)
 *
 * Snapshot (scheduler -> client): the aggregator state, filtered. See
 * docs/architecture.md for its layout. Decoders validate everything and never
 * read outside the input; malformed input gives ROAST_EMALFORMED and a
 * message. Inputs above ROAST_WIRE_MAX_BYTES are refused as malformed. */
#ifndef ROAST_WIRE_H
#define ROAST_WIRE_H

#include <stdbool.h>

#include "roast/agg.h"
#include "roast/common.h"

/* Versions of the two formats: a worker payload, and a snapshot (2: records
 * carry the span of the task that made them). */
#define ROAST_PAYLOAD_VERSION 1
#define ROAST_SNAPSHOT_VERSION 3
/* The oldest snapshot read: version 2 has the 14 series columns before the node's. */
#define ROAST_SNAPSHOT_OLDEST 2
#define ROAST_WIRE_MAX_BYTES ((size_t)1 << 30)

/* A growable byte buffer owned by the caller; free with roast_buf_free.
 * Encoders append to it (start from {0}); an encoder that fails leaves it as
 * it was. They return ROAST_EFULL when the output would exceed
 * ROAST_WIRE_MAX_BYTES (no decoder would take it) and ROAST_ENOMEM. */
typedef struct roast_buf {
    char *data;
    size_t len;
    size_t cap;
} roast_buf;

void roast_buf_free(roast_buf *buf);

typedef struct roast_digest_item {
    roast_str context, span, prefix, activity, unit;
    double value;
} roast_digest_item;

typedef struct roast_payload {
    roast_str incarnation;
    uint64_t seq;
    uint64_t since;
    bool full;
    const roast_digest_item *digests;
    size_t ndigests;
} roast_payload;

roast_status roast_wire_encode_payload(const roast_payload *payload, roast_buf *out);

/* A decoded payload; its string views point into the input bytes, which must
 * outlive it. */
typedef struct roast_payload_decoded roast_payload_decoded;

roast_status roast_wire_decode_payload(const char *data, size_t len, roast_payload_decoded **out,
                                       char *err, size_t errcap);
const roast_payload *roast_payload_view(const roast_payload_decoded *decoded);
void roast_payload_decoded_free(roast_payload_decoded *decoded);

/* What a snapshot keeps. spans (nspans ids; NULL = all) filters the task and
 * digest rows that carry a span (rows without span are kept only when
 * spans is NULL); series points are kept when they overlap [t_from, t_to]
 * (t_to = 0 means no upper bound). */
typedef struct roast_snapshot_filter {
    const roast_id *spans;
    size_t nspans;
    double t_from;
    double t_to;
} roast_snapshot_filter;

/* Layout: the comment above the encoder in wire.c and docs/architecture.md,
 * "Snapshot wire layout". filter may be NULL (everything); now is written as
 * taken_at. The "counters" carry roast_agg_report_get(agg). */
roast_status roast_wire_encode_snapshot(const roast_agg *agg, const roast_snapshot_filter *filter,
                                        double now, roast_buf *out);

/* Rebuilds an aggregator from snapshot bytes; *taken_at (may be NULL) gets
 * the time the snapshot was taken. The result (made with
 * roast_agg_new_restored, freed by the caller) yields the same rows in the
 * same order and the same series points bit for bit; strings get new ids.
 * Its roast_agg_report_get returns the snapshot's "counters", i.e. the
 * figures of the source, including series and intern figures. */
roast_status roast_wire_decode_snapshot(const char *data, size_t len, roast_agg **out,
                                        double *taken_at, char *err, size_t errcap);

#endif
