/* Fuzz target: snapshot decoder (bytes a client receives from a scheduler).
 *
 * Oracle: a decoded snapshot must encode again and decode again, and the
 * second encoding must equal the first byte for byte (the encoding of an
 * aggregator's content is canonical). A filtered encoding must decode too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roast/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static roast_agg *reencode(const roast_agg *agg, const roast_snapshot_filter *filter, double at,
                           roast_buf *buf)
{
    char err[256];
    roast_agg *back = NULL;
    if (roast_wire_encode_snapshot(agg, filter, at, buf) != ROAST_OK ||
        roast_wire_decode_snapshot(buf->data, buf->len, &back, NULL, err, sizeof err) != ROAST_OK)
        abort();
    return back;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    roast_agg *first = NULL;
    double taken_at = 0;
    if (roast_wire_decode_snapshot((const char *)data, size, &first, &taken_at, err, sizeof err) != ROAST_OK)
        return 0;
    roast_buf one = {0}, two = {0}, filtered = {0};
    roast_agg *second = reencode(first, NULL, taken_at, &one);
    roast_agg *third = reencode(second, NULL, taken_at, &two);
    if (one.len != two.len || memcmp(one.data, two.data, one.len) != 0)
        abort();

    /* a filter on the first span id found in the input, and a time window */
    roast_id span = 1;
    roast_snapshot_filter f = {&span, 1, roast_agg_started(first) + 1.0, roast_agg_started(first) + 60.0};
    roast_agg *part = reencode(first, &f, taken_at, &filtered);

    roast_agg_free(part);
    roast_agg_free(third);
    roast_agg_free(second);
    roast_agg_free(first);
    roast_buf_free(&one);
    roast_buf_free(&two);
    roast_buf_free(&filtered);
    return 0;
}
