/* payload: the worker payload's msgpack form (layout in wire.h), encoded by
 * DigestTracker on a worker and decoded on the scheduler. */
#include <stdlib.h>
#include <string.h>

#include "wire_codec.h"

/* A payload of an earlier build may also carry "records": unknown keys are ignored. */
enum { P_V, P_INC, P_SEQ, P_SINCE, P_FULL, P_DIGESTS, P_NKEYS };
static const char *const payload_keys[P_NKEYS] = {"v", "inc", "seq", "since", "full", "digests"};

roast_status roast_wire_encode_payload(const roast_payload *payload, roast_buf *out)
{
    if (!payload || !out || (payload->ndigests && !payload->digests))
        return ROAST_EINVAL;
    wire_out o = {out, out->len, false, false};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &o, wire_out_write);
    msgpack_pack_map(&pk, P_NKEYS);
    wire_pack_key(&pk, "v");
    msgpack_pack_uint64(&pk, ROAST_PAYLOAD_VERSION);
    wire_pack_key(&pk, "inc");
    wire_pack_str(&pk, payload->incarnation);
    wire_pack_key(&pk, "seq");
    msgpack_pack_uint64(&pk, payload->seq);
    wire_pack_key(&pk, "since");
    msgpack_pack_uint64(&pk, payload->since);
    wire_pack_key(&pk, "full");
    if (payload->full)
        msgpack_pack_true(&pk);
    else
        msgpack_pack_false(&pk);
    wire_pack_key(&pk, "digests");
    msgpack_pack_array(&pk, payload->ndigests);
    for (size_t i = 0; i < payload->ndigests && !o.failed; i++) {
        const roast_digest_item *d = &payload->digests[i];
        msgpack_pack_array(&pk, 6);
        wire_pack_str(&pk, d->context);
        wire_pack_str(&pk, d->span);
        wire_pack_str(&pk, d->prefix);
        wire_pack_str(&pk, d->activity);
        wire_pack_str(&pk, d->unit);
        wire_pack_number(&pk, d->value);
    }
    return wire_out_finish(&o);
}

struct roast_payload_decoded {
    roast_payload view;
    roast_digest_item *digests; /* owned; strings point into the input */
};

const roast_payload *roast_payload_view(const roast_payload_decoded *decoded)
{
    return &decoded->view;
}

void roast_payload_decoded_free(roast_payload_decoded *decoded)
{
    if (!decoded)
        return;
    free(decoded->digests);
    free(decoded);
}

static roast_status decode_digests(const msgpack_object *arr, roast_payload_decoded *d, char *err,
                                   size_t errcap)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return wire_fail(err, errcap, "payload.digests: expected an array");
    size_t n = arr->via.array.size;
    d->digests = calloc(n ? n : 1, sizeof *d->digests);
    if (!d->digests)
        return ROAST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *row = &arr->via.array.ptr[i];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 6)
            return wire_fail(err, errcap, "payload.digests[%zu]: expected an array of 6", i);
        const msgpack_object *c = row->via.array.ptr;
        roast_digest_item *item = &d->digests[i];
        roast_str *fields[5] = {&item->context, &item->span, &item->prefix, &item->activity,
                                &item->unit};
        for (int j = 0; j < 5; j++)
            if (!wire_get_str(&c[j], fields[j]))
                return wire_fail(err, errcap, "payload.digests[%zu][%d]: expected a string", i, j);
        if (!wire_get_number(&c[5], &item->value))
            return wire_fail(err, errcap, "payload.digests[%zu][5]: expected a number", i);
    }
    d->view.digests = d->digests;
    d->view.ndigests = n;
    return ROAST_OK;
}

static roast_status decode_payload_object(const msgpack_object *top, roast_payload_decoded *d,
                                          char *err, size_t errcap)
{
    const msgpack_object *f[P_NKEYS];
    uint64_t version;
    roast_status status = wire_check_version(top, "payload", ROAST_PAYLOAD_VERSION,
                                             ROAST_PAYLOAD_VERSION, &version, err, errcap);
    if (status == ROAST_OK)
        status = wire_map_fields(top, payload_keys, f, P_NKEYS, "payload", err, errcap);
    if (status != ROAST_OK)
        return status;
    if (!wire_get_str(f[P_INC], &d->view.incarnation))
        return wire_fail(err, errcap, "payload.inc: expected a string");
    if (!wire_get_uint(f[P_SEQ], &d->view.seq))
        return wire_fail(err, errcap, "payload.seq: expected an unsigned integer");
    if (!wire_get_uint(f[P_SINCE], &d->view.since))
        return wire_fail(err, errcap, "payload.since: expected an unsigned integer");
    if (f[P_FULL]->type != MSGPACK_OBJECT_BOOLEAN)
        return wire_fail(err, errcap, "payload.full: expected a boolean");
    d->view.full = f[P_FULL]->via.boolean;
    return decode_digests(f[P_DIGESTS], d, err, errcap);
}

roast_status roast_wire_decode_payload(const char *data, size_t len, roast_payload_decoded **out,
                                       char *err, size_t errcap)
{
    *out = NULL;
    if (!data && len)
        return ROAST_EINVAL;
    roast_payload_decoded *d = calloc(1, sizeof *d);
    if (!d)
        return ROAST_ENOMEM;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    roast_status status = wire_unpack(data, len, PAYLOAD_MIN_BYTES, &u, "payload", err, errcap);
    if (status == ROAST_OK)
        status = decode_payload_object(&u.data, d, err, errcap);
    msgpack_unpacked_destroy(&u);
    if (status != ROAST_OK) {
        roast_payload_decoded_free(d);
        return status;
    }
    *out = d;
    return ROAST_OK;
}
