/* agg_ingest: applies a decoded worker payload to the aggregator. */
#include <string.h>

#include "roast/agg.h"
#include "roast/wire.h"

static roast_status intern(roast_agg *agg, roast_str s, roast_id *id)
{
    return roast_intern_put(roast_agg_strings(agg), s.ptr, s.len, id);
}

/* Task prefixes have no bound of their own: beyond the table's soft bound they fold. */
static roast_status intern_prefix(roast_agg *agg, roast_str s, roast_id *id)
{
    return roast_intern_put_foldable(roast_agg_strings(agg), s.ptr, s.len, id);
}

/* Applies one digest; refusals at a bound are counted by the agg and skipped. */
static roast_status ingest_digest(roast_agg *agg, roast_id address, roast_id inc,
                                  const roast_digest_item *d)
{
    roast_digest_key key;
    memset(&key, 0, sizeof key);
    key.worker = address;
    roast_status status = intern(agg, d->context, &key.context);
    if (status == ROAST_OK)
        status = intern(agg, d->span, &key.span);
    if (status == ROAST_OK)
        status = intern_prefix(agg, d->prefix, &key.prefix);
    if (status == ROAST_OK)
        status = intern(agg, d->activity, &key.activity);
    if (status == ROAST_OK)
        status = intern(agg, d->unit, &key.unit);
    if (status == ROAST_OK)
        status = roast_agg_set_digest(agg, &key, inc, d->value);
    return status == ROAST_EFULL ? ROAST_OK : status;
}

static roast_status ingest_apply(roast_agg *agg, roast_id address, double now, const roast_payload *p,
                                 size_t len, bool *needs_flush)
{
    roast_id inc;
    roast_status status = intern(agg, p->incarnation, &inc);
    if (status != ROAST_OK)
        return status;
    if (!roast_agg_worker(agg, address)) {
        status = roast_agg_worker_seen(agg, address, ROAST_ID_EMPTY, now);
        if (status != ROAST_OK)
            return status;
    }
    bool apply;
    status = roast_agg_worker_beat(agg, address, inc, p->seq, p->since, p->full, len, &apply,
                                   needs_flush);
    if (status != ROAST_OK || !apply)
        return status;
    for (size_t i = 0; i < p->ndigests && status == ROAST_OK; i++)
        status = ingest_digest(agg, address, inc, &p->digests[i]);
    return status;
}

roast_status roast_agg_ingest_payload(roast_agg *agg, roast_id address, double now,
                                       const char *data, size_t len, bool *needs_flush,
                                       char *err, size_t errcap)
{
    *needs_flush = false;
    roast_payload_decoded *d;
    roast_status status = roast_wire_decode_payload(data, len, &d, err, errcap);
    if (status == ROAST_EMALFORMED)
        roast_agg_counters_mut(agg)->payload_errors++;
    if (status != ROAST_OK)
        return status;
    status = ingest_apply(agg, address, now, roast_payload_view(d), len, needs_flush);
    roast_payload_decoded_free(d);
    return status;
}
