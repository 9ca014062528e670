/* Fuzz target: worker payload decoder (outside bytes from every worker).
 *
 * Oracle: whatever decodes must encode again, decode again and give the same
 * payload bit for bit; and ingesting it into a fresh aggregator must succeed
 * or refuse at a bound, never fail as malformed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roast/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(roast_str a, roast_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static int same_payload(const roast_payload *a, const roast_payload *b)
{
    if (!same_str(a->incarnation, b->incarnation) || a->seq != b->seq || a->since != b->since ||
        a->full != b->full || a->ndigests != b->ndigests)
        return 0;
    for (size_t i = 0; i < a->ndigests; i++) {
        const roast_digest_item *x = &a->digests[i], *y = &b->digests[i];
        if (!same_str(x->context, y->context) || !same_str(x->span, y->span) ||
            !same_str(x->prefix, y->prefix) || !same_str(x->activity, y->activity) ||
            !same_str(x->unit, y->unit) || memcmp(&x->value, &y->value, sizeof x->value) != 0)
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    roast_payload_decoded *first = NULL;
    if (roast_wire_decode_payload((const char *)data, size, &first, err, sizeof err) != ROAST_OK)
        return 0;
    roast_buf buf = {0};
    roast_payload_decoded *second = NULL;
    if (roast_wire_encode_payload(roast_payload_view(first), &buf) != ROAST_OK ||
        roast_wire_decode_payload(buf.data, buf.len, &second, err, sizeof err) != ROAST_OK ||
        !same_payload(roast_payload_view(first), roast_payload_view(second)))
        abort();

    roast_agg *agg = roast_agg_new(NULL, 0.0);
    roast_id address;
    bool flush;
    if (!agg || roast_intern_put(roast_agg_strings(agg), "tcp://w:1", 9, &address) != ROAST_OK)
        abort();
    roast_status st = roast_agg_ingest_payload(agg, address, 1.0, (const char *)data, size, &flush,
                                                err, sizeof err);
    if (st != ROAST_OK && st != ROAST_EFULL)
        abort();
    roast_agg_free(agg);
    roast_payload_decoded_free(second);
    roast_payload_decoded_free(first);
    roast_buf_free(&buf);
    return 0;
}
