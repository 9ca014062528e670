/* wire: msgpack worker payloads and snapshots (formats in wire.h and below).
 *
 * Encoders stream through a msgpack_packer into a roast_buf. Decoders treat
 * their input as hostile: a first pass (wire_scan) walks the bytes without
 * allocating and checks every declared length against the bytes left, the
 * nesting depth, and that all elements promised so far could still fit in
 * the rest of the input (each needs at least one byte). Only then does
 * msgpack_unpack_next build its object tree, whose size is thereby bounded by
 * one msgpack_object per input byte. The tree's strings are views into the
 * input (msgpack-c references, it does not copy). Then every type, key,
 * array length and string index is validated before anything is applied.
 *
 * Doubles are packed in the smallest exact form: an integer when the value
 * is integral (never -0.0), else float32 when that converts back to the same
 * bits, else float64. Decoders accept any integer or float where a number is
 * expected, so every double round-trips bit for bit (NaN included). */
#include "roast/wire.h"

#include <float.h>
#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "roast/series.h"
#include "rows.h"

/* Deep enough for every format here (a snapshot nests 4 levels), well under
 * msgpack-c's own fixed stack of 32. */
#define WIRE_MAX_DEPTH 16

/* Bytes per element, on average, of any worker payload DigestTracker writes:
 * digest rows carry a context, an activity and a unit of several bytes each.
 * The decoder's object tree then costs at most 8 times the payload. Inputs of
 * up to WIRE_SMALL_OBJECTS elements are not held to it. */
#define PAYLOAD_MIN_BYTES 3
#define WIRE_SMALL_OBJECTS 4096

#ifdef __GNUC__
#define WIRE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define WIRE_PRINTF(f, a)
#endif

static roast_status WIRE_PRINTF(3, 4) fail(char *err, size_t errcap, const char *fmt, ...)
{
    if (err && errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errcap, fmt, ap);
        va_end(ap);
    }
    return ROAST_EMALFORMED;
}

/* ---- output ----------------------------------------------------------- */

void roast_buf_free(roast_buf *buf)
{
    if (!buf)
        return;
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* The packer's sink. After the first failure every write fails, so encoders
 * need not check each pack call: they check `failed` once at the end. */
typedef struct wire_out {
    roast_buf *buf;
    size_t start; /* buf->len before encoding, restored on failure */
    bool failed;
    bool too_big; /* the failure was the ROAST_WIRE_MAX_BYTES bound */
} wire_out;

static int out_write(void *data, const char *src, size_t len)
{
    wire_out *o = data;
    roast_buf *b = o->buf;
    if (o->failed)
        return -1;
    if (len > ROAST_WIRE_MAX_BYTES - (b->len - o->start)) {
        o->failed = o->too_big = true; /* no decoder would accept it */
        return -1;
    }
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        if (cap < b->len + len)
            cap = b->len + len;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            o->failed = true;
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, len);
    b->len += len;
    return 0;
}

/* Ends an encoding: ENOMEM and EFULL (output above ROAST_WIRE_MAX_BYTES) leave
 * buf as it was. */
static roast_status out_finish(wire_out *o)
{
    if (!o->failed)
        return ROAST_OK;
    o->buf->len = o->start;
    return o->too_big ? ROAST_EFULL : ROAST_ENOMEM;
}

static void pack_key(msgpack_packer *pk, const char *key)
{
    size_t len = strlen(key);
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, key, len);
}

static void pack_str(msgpack_packer *pk, roast_str s)
{
    msgpack_pack_str(pk, s.len);
    msgpack_pack_str_body(pk, s.ptr, s.len);
}

static void pack_number(msgpack_packer *pk, double x)
{
    if (x >= -0x1p63 && x < 0x1p63 && x == trunc(x) && !(x == 0 && signbit(x))) {
        if (x >= 0)
            msgpack_pack_uint64(pk, (uint64_t)x);
        else
            msgpack_pack_int64(pk, (int64_t)x);
        return;
    }
    if (isnan(x) || isinf(x) || fabs(x) <= FLT_MAX) {
        float f = (float)x;
        double back = f;
        if (memcmp(&back, &x, sizeof x) == 0) {
            msgpack_pack_float(pk, f);
            return;
        }
    }
    msgpack_pack_double(pk, x);
}

/* ---- input -------------------------------------------------------------- */

static uint64_t load_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Where a msgpack item's header says its body and children are. */
typedef struct scan_item {
    int header;     /* bytes of length/type fields after the type byte */
    int len_bytes;  /* how many of those give a length (0 = fixed size) */
    uint64_t body;  /* bytes of payload after the header */
    uint64_t items; /* child objects (maps count keys and values) */
    bool ok;
} scan_item;

static scan_item scan_type(uint8_t b)
{
    scan_item it = {0, 0, 0, 0, true};
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        return it;
    if (b <= 0x8f) {
        it.items = 2u * (b & 0x0fu);
    } else if (b <= 0x9f) {
        it.items = b & 0x0fu;
    } else if (b <= 0xbf) {
        it.body = b & 0x1fu;
    } else {
        switch (b) {
        case 0xc4: case 0xc5: case 0xc6: /* bin 8/16/32 */
        case 0xd9: case 0xda: case 0xdb: /* str 8/16/32 */
            it.len_bytes = b <= 0xc6 ? 1 << (b - 0xc4) : 1 << (b - 0xd9);
            it.header = it.len_bytes;
            break;
        case 0xc7: case 0xc8: case 0xc9: /* ext 8/16/32: length, then type */
            it.len_bytes = 1 << (b - 0xc7);
            it.header = it.len_bytes + 1;
            break;
        case 0xca: it.body = 4; break;
        case 0xcb: it.body = 8; break;
        case 0xcc: case 0xcd: case 0xce: case 0xcf: it.body = 1u << (b - 0xcc); break;
        case 0xd0: case 0xd1: case 0xd2: case 0xd3: it.body = 1u << (b - 0xd0); break;
        case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext: type + data */
            it.body = 1 + (1u << (b - 0xd4));
            break;
        case 0xdc: case 0xdd: case 0xde: case 0xdf: /* array/map 16/32 */
            it.len_bytes = b & 1 ? 4 : 2;
            it.header = it.len_bytes;
            break;
        default: it.ok = false; break; /* 0xc1 is never used */
        }
    }
    return it;
}

/* Checks the structure of the msgpack value at the start of p (see the top
 * comment), stores its end in *end and the number of objects it holds in
 * *objects. Iterative, depth-limited. */
static roast_status wire_scan(const uint8_t *p, size_t len, size_t *end, uint64_t *objects,
                              const char *what, char *err, size_t errcap)
{
    uint64_t left[WIRE_MAX_DEPTH + 1];
    uint64_t pending = 1; /* objects promised and not yet read, at all levels */
    *objects = 1;
    int depth = 0;
    size_t pos = 0;
    left[0] = 1;
    while (depth >= 0) {
        if (left[depth] == 0) {
            depth--;
            continue;
        }
        left[depth]--;
        pending--;
        if (pos >= len)
            return fail(err, errcap, "%s: truncated at byte %zu", what, pos);
        uint8_t b = p[pos++];
        scan_item it = scan_type(b);
        if (!it.ok)
            return fail(err, errcap, "%s: invalid msgpack type byte 0x%02x at byte %zu", what, b, pos - 1);
        if ((uint64_t)it.header > len - pos)
            return fail(err, errcap, "%s: truncated at byte %zu", what, pos);
        if (it.len_bytes) {
            uint64_t n = load_be(p + pos, it.len_bytes);
            if (b >= 0xdc)
                it.items = b >= 0xde ? 2 * n : n;
            else
                it.body = n;
        }
        pos += (size_t)it.header;
        if (it.body > len - pos)
            return fail(err, errcap, "%s: byte %zu declares %llu bytes, only %zu left", what,
                        pos, (unsigned long long)it.body, len - pos);
        pos += (size_t)it.body;
        if (it.items) {
            if (depth == WIRE_MAX_DEPTH)
                return fail(err, errcap, "%s: nested deeper than %d at byte %zu", what,
                            WIRE_MAX_DEPTH, pos);
            /* a string body may have eaten bytes promised to pending items */
            if (pending > len - pos || it.items > len - pos - pending)
                return fail(err, errcap, "%s: byte %zu declares %llu elements, only %zu bytes left",
                            what, pos, (unsigned long long)it.items, len - pos);
            left[++depth] = it.items;
            pending += it.items;
            *objects += it.items;
        }
    }
    *end = pos;
    return ROAST_OK;
}

/* Scans, then unpacks data into u. The caller destroys u.
 *
 * msgpack-c builds one msgpack_object (24 bytes) per element, so memory
 * follows the elements, not the bytes: a payload of one-byte nils would cost
 * 24 times its size. Every element of a format here takes at least
 * min_bytes of input on average (the caller says how many), so denser input
 * is refused before anything is built: the tree then costs at most
 * 24 / min_bytes times the input. */
static roast_status wire_unpack(const char *data, size_t len, size_t min_bytes,
                                msgpack_unpacked *u, const char *what, char *err, size_t errcap)
{
    if (len > ROAST_WIRE_MAX_BYTES)
        return fail(err, errcap, "%s: %zu bytes, above the limit of %zu", what, len,
                    ROAST_WIRE_MAX_BYTES);
    if (len == 0)
        return fail(err, errcap, "%s: empty input", what);
    size_t end = 0;
    uint64_t objects = 0;
    roast_status status = wire_scan((const uint8_t *)data, len, &end, &objects, what, err, errcap);
    if (status != ROAST_OK)
        return status;
    if (end != len)
        return fail(err, errcap, "%s: %zu trailing bytes after the top object", what, len - end);
    if (objects > WIRE_SMALL_OBJECTS && objects > len / min_bytes)
        return fail(err, errcap,
                    "%s: %llu elements in %zu bytes, denser than %zu bytes per element", what,
                    (unsigned long long)objects, len, min_bytes);
    size_t off = 0;
    msgpack_unpack_return rc = msgpack_unpack_next(u, data, len, &off);
    if (rc == MSGPACK_UNPACK_NOMEM_ERROR)
        return ROAST_ENOMEM;
    if (rc != MSGPACK_UNPACK_SUCCESS || off != len)
        return fail(err, errcap, "%s: not valid msgpack", what);
    return ROAST_OK;
}

static bool get_number(const msgpack_object *o, double *out)
{
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *out = (double)o->via.u64; return true;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *out = (double)o->via.i64; return true;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *out = o->via.f64; return true;
    default: return false;
    }
}

static bool get_uint(const msgpack_object *o, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return false;
    *out = o->via.u64;
    return true;
}

static bool get_str(const msgpack_object *o, roast_str *out)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return false;
    out->ptr = o->via.str.ptr;
    out->len = o->via.str.size;
    return true;
}

/* Opaque bytes: bin, or str from packers that have no bin type. */
static bool get_bytes(const msgpack_object *o, roast_str *out)
{
    if (o->type == MSGPACK_OBJECT_BIN) {
        out->ptr = o->via.bin.ptr;
        out->len = o->via.bin.size;
        return true;
    }
    return get_str(o, out);
}

static bool key_is(const msgpack_object *key, const char *name)
{
    size_t n = strlen(name);
    return key->type == MSGPACK_OBJECT_STR && key->via.str.size == n &&
           memcmp(key->via.str.ptr, name, n) == 0;
}

/* Picks the values of the named keys out of a map: every name is required,
 * may appear once, and other (string) keys are ignored so that newer
 * writers can add fields. */
/* Finds the n named fields of a map; names from index `required` on may be
 * absent (NULL). Unknown keys are ignored, duplicates refused. */
static roast_status map_fields_some(const msgpack_object *map, const char *const *names,
                                    const msgpack_object **values, size_t n, size_t required,
                                    const char *what, char *err, size_t errcap)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return fail(err, errcap, "%s: expected a map", what);
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    for (uint32_t k = 0; k < map->via.map.size; k++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[k];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            return fail(err, errcap, "%s: key %u is not a string", what, (unsigned)k);
        for (size_t i = 0; i < n; i++) {
            if (!key_is(&kv->key, names[i]))
                continue;
            if (values[i])
                return fail(err, errcap, "%s: duplicate key \"%s\"", what, names[i]);
            values[i] = &kv->val;
        }
    }
    for (size_t i = 0; i < required; i++)
        if (!values[i])
            return fail(err, errcap, "%s: missing key \"%s\"", what, names[i]);
    return ROAST_OK;
}

static roast_status map_fields(const msgpack_object *map, const char *const *names,
                               const msgpack_object **values, size_t n, const char *what,
                               char *err, size_t errcap)
{
    return map_fields_some(map, names, values, n, n, what, err, errcap);
}

/* The version is checked before anything else, so that a newer writer's
 * format is reported as such rather than as a missing or mistyped field. */
static roast_status check_version(const msgpack_object *map, const char *what, char *err,
                                  size_t errcap)
{
    const msgpack_object *v = NULL;
    for (uint32_t k = 0; map->type == MSGPACK_OBJECT_MAP && k < map->via.map.size && !v; k++)
        if (key_is(&map->via.map.ptr[k].key, "v"))
            v = &map->via.map.ptr[k].val;
    if (!v)
        return ROAST_OK; /* map_fields reports it missing */
    uint64_t version;
    if (!get_uint(v, &version))
        return fail(err, errcap, "%s.v: expected an unsigned integer", what);
    if (version > ROAST_WIRE_VERSION)
        return fail(err, errcap, "%s: version %llu is newer than this build's version %d", what,
                    (unsigned long long)version, ROAST_WIRE_VERSION);
    if (version != ROAST_WIRE_VERSION)
        return fail(err, errcap, "%s: unknown version %llu", what, (unsigned long long)version);
    return ROAST_OK;
}

/* ==== worker payload ====================================================== */

enum { P_V, P_INC, P_SEQ, P_SINCE, P_FULL, P_DIGESTS, P_RECORDS, P_NKEYS };
static const char *const payload_keys[P_NKEYS] = {"v", "inc", "seq", "since", "full", "digests", "records"};

roast_status roast_wire_encode_payload(const roast_payload *payload, roast_buf *out)
{
    if (!payload || !out || (payload->ndigests && !payload->digests) ||
        (payload->nrecords && !payload->records))
        return ROAST_EINVAL;
    wire_out o = {out, out->len, false, false};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &o, out_write);
    msgpack_pack_map(&pk, P_NKEYS);
    pack_key(&pk, "v");
    msgpack_pack_uint64(&pk, ROAST_WIRE_VERSION);
    pack_key(&pk, "inc");
    pack_str(&pk, payload->incarnation);
    pack_key(&pk, "seq");
    msgpack_pack_uint64(&pk, payload->seq);
    pack_key(&pk, "since");
    msgpack_pack_uint64(&pk, payload->since);
    pack_key(&pk, "full");
    if (payload->full)
        msgpack_pack_true(&pk);
    else
        msgpack_pack_false(&pk);
    pack_key(&pk, "digests");
    msgpack_pack_array(&pk, payload->ndigests);
    for (size_t i = 0; i < payload->ndigests && !o.failed; i++) {
        const roast_digest_item *d = &payload->digests[i];
        msgpack_pack_array(&pk, 6);
        pack_str(&pk, d->context);
        pack_str(&pk, d->span);
        pack_str(&pk, d->prefix);
        pack_str(&pk, d->activity);
        pack_str(&pk, d->unit);
        pack_number(&pk, d->value);
    }
    pack_key(&pk, "records");
    msgpack_pack_array(&pk, payload->nrecords);
    for (size_t i = 0; i < payload->nrecords && !o.failed; i++) {
        msgpack_pack_array(&pk, 2);
        msgpack_pack_uint64(&pk, payload->records[i].seq);
        msgpack_pack_bin(&pk, payload->records[i].data.len);
        msgpack_pack_bin_body(&pk, payload->records[i].data.ptr, payload->records[i].data.len);
    }
    return out_finish(&o);
}

struct roast_payload_decoded {
    roast_payload view;
    roast_digest_item *digests; /* owned; strings point into the input */
    roast_record_item *records; /* owned; data points into the input */
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
    free(decoded->records);
    free(decoded);
}

static roast_status decode_digests(const msgpack_object *arr, roast_payload_decoded *d, char *err,
                                   size_t errcap)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return fail(err, errcap, "payload.digests: expected an array");
    size_t n = arr->via.array.size;
    d->digests = calloc(n ? n : 1, sizeof *d->digests);
    if (!d->digests)
        return ROAST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *row = &arr->via.array.ptr[i];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 6)
            return fail(err, errcap, "payload.digests[%zu]: expected an array of 6", i);
        const msgpack_object *c = row->via.array.ptr;
        roast_digest_item *item = &d->digests[i];
        roast_str *fields[5] = {&item->context, &item->span, &item->prefix, &item->activity,
                                &item->unit};
        for (int j = 0; j < 5; j++)
            if (!get_str(&c[j], fields[j]))
                return fail(err, errcap, "payload.digests[%zu][%d]: expected a string", i, j);
        if (!get_number(&c[5], &item->value))
            return fail(err, errcap, "payload.digests[%zu][5]: expected a number", i);
    }
    d->view.digests = d->digests;
    d->view.ndigests = n;
    return ROAST_OK;
}

static roast_status decode_records(const msgpack_object *arr, roast_payload_decoded *d, char *err,
                                   size_t errcap)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return fail(err, errcap, "payload.records: expected an array");
    size_t n = arr->via.array.size;
    d->records = calloc(n ? n : 1, sizeof *d->records);
    if (!d->records)
        return ROAST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *row = &arr->via.array.ptr[i];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 2)
            return fail(err, errcap, "payload.records[%zu]: expected an array of 2", i);
        if (!get_uint(&row->via.array.ptr[0], &d->records[i].seq))
            return fail(err, errcap, "payload.records[%zu][0]: expected an unsigned integer", i);
        if (!get_bytes(&row->via.array.ptr[1], &d->records[i].data))
            return fail(err, errcap, "payload.records[%zu][1]: expected bytes", i);
    }
    d->view.records = d->records;
    d->view.nrecords = n;
    return ROAST_OK;
}

static roast_status decode_payload_object(const msgpack_object *top, roast_payload_decoded *d,
                                          char *err, size_t errcap)
{
    const msgpack_object *f[P_NKEYS];
    roast_status status = check_version(top, "payload", err, errcap);
    if (status == ROAST_OK)
        status = map_fields(top, payload_keys, f, P_NKEYS, "payload", err, errcap);
    if (status != ROAST_OK)
        return status;
    if (!get_str(f[P_INC], &d->view.incarnation))
        return fail(err, errcap, "payload.inc: expected a string");
    if (!get_uint(f[P_SEQ], &d->view.seq))
        return fail(err, errcap, "payload.seq: expected an unsigned integer");
    if (!get_uint(f[P_SINCE], &d->view.since))
        return fail(err, errcap, "payload.since: expected an unsigned integer");
    if (f[P_FULL]->type != MSGPACK_OBJECT_BOOLEAN)
        return fail(err, errcap, "payload.full: expected a boolean");
    d->view.full = f[P_FULL]->via.boolean;
    status = decode_digests(f[P_DIGESTS], d, err, errcap);
    if (status == ROAST_OK)
        status = decode_records(f[P_RECORDS], d, err, errcap);
    return status;
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
    for (size_t i = 0; i < p->ndigests; i++) {
        status = ingest_digest(agg, address, inc, &p->digests[i]);
        if (status != ROAST_OK)
            return status;
    }
    for (size_t i = 0; i < p->nrecords; i++) {
        bool kept;
        const roast_record_item *r = &p->records[i];
        status = roast_agg_add_record(agg, address, r->seq, now, r->data.ptr, r->data.len, &kept);
        if (status != ROAST_OK && status != ROAST_EFULL)
            return status;
    }
    return ROAST_OK;
}

roast_status roast_wire_ingest_payload(roast_agg *agg, roast_id address, double now,
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
    status = ingest_apply(agg, address, now, &d->view, len, needs_flush);
    roast_payload_decoded_free(d);
    return status;
}

/* ==== snapshot ============================================================
 *
 * Layout (ROAST_WIRE_VERSION 1); also in docs/architecture.md, "Snapshot
 * wire layout". A msgpack map with exactly these keys (readers ignore others):
 *
 *   "v"            1
 *   "taken_at"     number, scheduler clock when encoded
 *   "started"      number, roast_agg_started
 *   "limits"       map {"max_strings", "max_task_rows", "max_digest_rows",
 *                  "max_workers", "max_spans", "series_cap_bytes",
 *                  "record_cap_bytes"} of uint
 *   "series_epoch" number, time origin of the series (== started)
 *   "strings"      [str, ...]: the interned strings the rows below refer to,
 *                  in intern-id order; index 0 is "". Every S below is an
 *                  index into this array.
 *   "workers"      [[S address, S name, S incarnation, uint restarts,
 *                    added, removed, uint payloads, uint payload_bytes,
 *                    uint last_seq, uint gaps, uint flushes], ...]
 *   "tasks"        [[S worker, S span, S prefix, uint transitions, uint tasks,
 *                    uint erred, compute_s, transfer_s, uint output_bytes,
 *                    first_start, last_stop], ...]
 *   "digests"      [[S worker, S context, S span, S prefix, S activity, S unit,
 *                    value], ...]
 *   "spans"        [[S span, S parent, S name], ...]
 *   "records"      [[S worker, uint seq, time, bin data], ...]
 *   "errors"       [[S name, uint count], ...]
 *   "counters"     map of the roast_agg_report fields: "events",
 *                  "dropped_events", "hook_calls", "hook_errors",
 *                  "hook_ns_per_call" (number), "payloads", "payload_bytes",
 *                  "payload_errors", "records", "records_dropped",
 *                  "rows_refused", "series_bytes", "series_cap_bytes",
 *                  "series_samples", "series_folds", "strings",
 *                  "intern_overflows" (uint unless noted)
 *   "series"       map {S worker: [point, ...]} in time order; a point is
 *                  [t, v0 .. v13] (15 numbers) for a single sample, or
 *                  [t_first, t_last, uint count, min0..min13, max0..max13,
 *                   mean0..mean13] (45) for a bucket. Columns in roast_column
 *                  order.
 *
 * Unnamed fields are numbers (any msgpack int or float). Tables list rows in
 * the aggregator's insertion order. The filter drops task and digest rows
 * outside its spans, span rows not in it, and series points outside its time
 * window, and then workers left without points from "series"; workers,
 * records and errors are kept whole. */

enum snap_mode { SNAP_MARK, SNAP_COUNT, SNAP_WRITE };

#define NO_INDEX UINT32_MAX

typedef struct snap_enc {
    const roast_agg *agg;
    const roast_intern *strings;
    const roast_snapshot_filter *filter;
    roast_id *spans; /* sorted copy of filter->spans, or NULL for all */
    size_t nspans;
    uint32_t *index; /* intern id -> index in "strings"; NO_INDEX if unused */
    uint32_t nids;   /* intern count at the start */
    enum snap_mode mode;
    size_t count;
    msgpack_packer pk;
} snap_enc;

static void mark(snap_enc *e, roast_id id)
{
    if (id < e->nids)
        e->index[id] = 0;
}

static void pack_sid(snap_enc *e, roast_id id)
{
    msgpack_pack_uint32(&e->pk, id < e->nids ? e->index[id] : 0);
}

static int cmp_id(const void *a, const void *b)
{
    roast_id x = *(const roast_id *)a, y = *(const roast_id *)b;
    return x < y ? -1 : x > y;
}

/* Task and digest rows: all without a filter, else those of its spans. */
static bool row_span_kept(const snap_enc *e, roast_id span)
{
    if (!e->spans)
        return true;
    return bsearch(&span, e->spans, e->nspans, sizeof span, cmp_id) != NULL;
}

static void pack_cell(snap_enc *e, char kind, const roast_cell *cell)
{
    switch (kind) {
    case 's': pack_sid(e, cell->id); break;
    case 'u': msgpack_pack_uint64(&e->pk, cell->u); break;
    case 'w': msgpack_pack_uint32(&e->pk, (uint32_t)cell->u); break;
    case 'd': pack_number(&e->pk, cell->d); break;
    default:
        msgpack_pack_bin(&e->pk, cell->bytes.len);
        msgpack_pack_bin_body(&e->pk, cell->bytes.ptr, cell->bytes.len);
        break;
    }
}

/* One row, in the pass e->mode: marks its strings, counts it, or writes it. */
static int snap_row(void *ctx, const roast_table *table, const roast_cell *cells)
{
    snap_enc *e = ctx;
    const char *kinds = table->kinds;
    if (table->span_col >= 0 && !row_span_kept(e, cells[table->span_col].id))
        return 0;
    if (e->mode == SNAP_MARK) {
        for (size_t j = 0; kinds[j]; j++)
            if (kinds[j] == 's')
                mark(e, cells[j].id);
    } else if (e->mode == SNAP_COUNT) {
        e->count++;
    } else {
        msgpack_pack_array(&e->pk, strlen(kinds));
        for (size_t j = 0; kinds[j]; j++)
            pack_cell(e, kinds[j], &cells[j]);
    }
    return 0;
}

/* Writes one table: counts its kept rows, then writes them. */
static void snap_table(snap_enc *e, roast_table_id table)
{
    pack_key(&e->pk, roast_tables[table].name);
    e->mode = SNAP_COUNT;
    e->count = 0;
    roast_rows_each(e->agg, table, snap_row, e);
    msgpack_pack_array(&e->pk, e->count);
    e->mode = SNAP_WRITE;
    roast_rows_each(e->agg, table, snap_row, e);
}

static void pack_point(msgpack_packer *pk, const roast_series_point *p)
{
    if (roast_point_is_sample(p)) {
        msgpack_pack_array(pk, 1 + ROAST_NCOLS);
        pack_number(pk, p->t_first);
        for (int c = 0; c < ROAST_NCOLS; c++)
            pack_number(pk, p->mean[c]);
        return;
    }
    msgpack_pack_array(pk, 3 + 3 * ROAST_NCOLS);
    pack_number(pk, p->t_first);
    pack_number(pk, p->t_last);
    msgpack_pack_uint32(pk, p->count);
    const double *cols[3] = {p->min, p->max, p->mean};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < ROAST_NCOLS; c++)
            pack_number(pk, cols[k][c]);
}

static double point_time(const roast_series *s, roast_id worker, size_t i, bool last)
{
    roast_series_point p;
    if (roast_series_point_at(s, worker, i, &p) != ROAST_OK)
        return NAN;
    return last ? p.t_last : p.t_first;
}

/* The points of a worker inside the window: a contiguous range [*lo, *hi),
 * since points neither overlap nor go back in time. Returns hi - lo. */
static size_t series_range(const snap_enc *e, roast_id worker, size_t *lo, size_t *hi)
{
    const roast_series *s = roast_agg_series_const(e->agg);
    size_t n = roast_series_points(s, worker);
    size_t a = 0, b = n;
    while (a < b) { /* first point with t_last >= t_from */
        size_t mid = a + (b - a) / 2;
        if (point_time(s, worker, mid, true) >= e->filter->t_from)
            b = mid;
        else
            a = mid + 1;
    }
    *lo = a;
    b = n;
    if (e->filter->t_to != 0) {
        while (a < b) { /* first point with t_first > t_to */
            size_t mid = a + (b - a) / 2;
            if (point_time(s, worker, mid, false) > e->filter->t_to)
                b = mid;
            else
                a = mid + 1;
        }
    }
    *hi = b;
    return *hi - *lo;
}

/* The series map; workers is the list of workers with data. */
static void snap_series(snap_enc *e, const roast_id *workers, size_t nworkers)
{
    size_t lo, hi;
    if (e->mode == SNAP_MARK) {
        for (size_t i = 0; i < nworkers; i++)
            if (series_range(e, workers[i], &lo, &hi))
                mark(e, workers[i]);
        return;
    }
    size_t with_points = 0;
    for (size_t i = 0; i < nworkers; i++)
        with_points += series_range(e, workers[i], &lo, &hi) > 0;
    pack_key(&e->pk, "series");
    msgpack_pack_map(&e->pk, with_points);
    const roast_series *s = roast_agg_series_const(e->agg);
    for (size_t i = 0; i < nworkers; i++) {
        if (!series_range(e, workers[i], &lo, &hi))
            continue;
        pack_sid(e, workers[i]);
        msgpack_pack_array(&e->pk, hi - lo);
        roast_series_point p;
        for (size_t j = lo; j < hi; j++)
            if (roast_series_point_at(s, workers[i], j, &p) == ROAST_OK)
                pack_point(&e->pk, &p);
    }
}

static void snap_mark_all(snap_enc *e, const roast_id *workers, size_t nworkers)
{
    e->mode = SNAP_MARK;
    for (int t = 0; t < ROAST_NTABLES; t++)
        roast_rows_each(e->agg, (roast_table_id)t, snap_row, e);
    snap_series(e, workers, nworkers);
    e->index[0] = 0; /* "" is always index 0 */
}

static void snap_strings(snap_enc *e)
{
    uint32_t n = 0;
    for (uint32_t id = 0; id < e->nids; id++)
        if (e->index[id] != NO_INDEX)
            e->index[id] = n++;
    pack_key(&e->pk, "strings");
    msgpack_pack_array(&e->pk, n);
    for (uint32_t id = 0; id < e->nids; id++)
        if (e->index[id] != NO_INDEX)
            pack_str(&e->pk, roast_intern_get(e->strings, id));
}

static void pack_uint_field(msgpack_packer *pk, const char *key, uint64_t v)
{
    pack_key(pk, key);
    msgpack_pack_uint64(pk, v);
}

static void snap_limits(msgpack_packer *pk, const roast_agg_limits *l)
{
    uint64_t v[ROAST_NLIMITS];
    roast_limits_to_values(l, v);
    pack_key(pk, "limits");
    msgpack_pack_map(pk, ROAST_NLIMITS);
    for (int i = 0; i < ROAST_NLIMITS; i++)
        pack_uint_field(pk, roast_limit_keys[i], v[i]);
}

static void snap_counters(msgpack_packer *pk, const roast_agg_report *r)
{
    roast_cell v[ROAST_NCOUNTERS];
    roast_report_to_cells(r, v);
    pack_key(pk, "counters");
    msgpack_pack_map(pk, ROAST_NCOUNTERS);
    for (int i = 0; i < ROAST_NCOUNTERS; i++) {
        pack_key(pk, roast_counter_keys[i]);
        if (i == ROAST_COUNTER_HOOK_NS)
            pack_number(pk, v[i].d);
        else
            msgpack_pack_uint64(pk, v[i].u);
    }
}

static void snap_write(snap_enc *e, double now, const roast_id *workers, size_t nworkers)
{
    msgpack_packer *pk = &e->pk;
    roast_agg_report report;
    roast_agg_report_get(e->agg, &report);
    msgpack_pack_map(pk, 14);
    pack_uint_field(pk, "v", ROAST_WIRE_VERSION);
    pack_key(pk, "taken_at");
    pack_number(pk, now);
    pack_key(pk, "started");
    pack_number(pk, roast_agg_started(e->agg));
    snap_limits(pk, roast_agg_limits_get(e->agg));
    pack_key(pk, "series_epoch");
    pack_number(pk, roast_series_epoch(roast_agg_series_const(e->agg)));
    snap_strings(e);
    for (int t = 0; t < ROAST_NTABLES; t++)
        snap_table(e, (roast_table_id)t);
    snap_counters(pk, &report);
    e->mode = SNAP_WRITE;
    snap_series(e, workers, nworkers);
}

roast_status roast_wire_encode_snapshot(const roast_agg *agg, const roast_snapshot_filter *filter,
                                        double now, roast_buf *out)
{
    static const roast_snapshot_filter everything = {NULL, 0, 0.0, 0.0};
    if (!agg || !out || (filter && filter->nspans && !filter->spans))
        return ROAST_EINVAL;
    snap_enc e;
    memset(&e, 0, sizeof e);
    e.agg = agg;
    e.strings = roast_agg_strings_const(agg);
    e.filter = filter ? filter : &everything;
    e.nids = roast_intern_count(e.strings);
    const roast_series *series = roast_agg_series_const(agg);
    size_t nworkers = roast_series_workers(series, NULL, 0);
    roast_id *workers = malloc((nworkers ? nworkers : 1) * sizeof *workers);
    e.index = malloc((size_t)e.nids * sizeof *e.index);
    if (e.filter->spans) {
        e.nspans = e.filter->nspans;
        e.spans = malloc((e.nspans ? e.nspans : 1) * sizeof *e.spans);
    }
    roast_status status = ROAST_ENOMEM;
    if (workers && e.index && (!e.filter->spans || e.spans)) {
        nworkers = roast_series_workers(series, workers, nworkers);
        memset(e.index, 0xff, (size_t)e.nids * sizeof *e.index);
        if (e.spans) {
            memcpy(e.spans, e.filter->spans, e.nspans * sizeof *e.spans);
            qsort(e.spans, e.nspans, sizeof *e.spans, cmp_id);
        }
        wire_out o = {out, out->len, false, false};
        msgpack_packer_init(&e.pk, &o, out_write);
        snap_mark_all(&e, workers, nworkers);
        snap_write(&e, now, workers, nworkers);
        status = out_finish(&o);
    }
    free(e.spans);
    free(e.index);
    free(workers);
    return status;
}

/* ---- snapshot decoding ------------------------------------------------ */

typedef struct snap_dec {
    roast_agg *agg;
    roast_id *ids; /* "strings" index -> id in agg */
    size_t nids;
    char *err;
    size_t errcap;
} snap_dec;

/* Cells (rows.h) in a snapshot: strings are indexes into "strings"; bytes
 * are views into the input. */
static const char *kind_name(char kind)
{
    switch (kind) {
    case 's': return "a string index";
    case 'u': return "an unsigned integer";
    case 'w': return "an unsigned 32-bit integer";
    case 'd': return "a number";
    default: return "bytes";
    }
}

static bool read_cell(const snap_dec *d, const msgpack_object *o, char kind, roast_cell *out)
{
    uint64_t u;
    switch (kind) {
    case 's':
        if (!get_uint(o, &u) || u >= d->nids)
            return false;
        out->id = d->ids[u];
        return true;
    case 'u': return get_uint(o, &out->u);
    case 'w':
        if (!get_uint(o, &u) || u > UINT32_MAX)
            return false;
        out->u = u;
        return true;
    case 'd': return get_number(o, &out->d);
    default: return get_bytes(o, &out->bytes);
    }
}

static roast_status read_row(const snap_dec *d, const msgpack_object *row,
                             const roast_table *table, size_t i, roast_cell *cells)
{
    const char *kinds = table->kinds;
    size_t n = strlen(kinds);
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != n)
        return fail(d->err, d->errcap, "snapshot.%s[%zu]: expected an array of %zu", table->name,
                    i, n);
    for (size_t j = 0; j < n; j++)
        if (!read_cell(d, &row->via.array.ptr[j], kinds[j], &cells[j]))
            return fail(d->err, d->errcap, "snapshot.%s[%zu][%zu]: expected %s", table->name, i,
                        j, kind_name(kinds[j]));
    return ROAST_OK;
}

static roast_status dec_table(snap_dec *d, const msgpack_object *arr, const roast_table *table)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return fail(d->err, d->errcap, "snapshot.%s: expected an array", table->name);
    roast_cell cells[ROAST_ROW_MAX_CELLS] = {{0}};
    for (size_t i = 0; i < arr->via.array.size; i++) {
        roast_status status = read_row(d, &arr->via.array.ptr[i], table, i, cells);
        if (status == ROAST_OK)
            status = table->restore(d->agg, cells);
        if (status == ROAST_EFULL)
            return fail(d->err, d->errcap, "snapshot.%s[%zu]: beyond the snapshot's own limits",
                        table->name, i);
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static roast_status dec_strings(snap_dec *d, const msgpack_object *arr)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return fail(d->err, d->errcap, "snapshot.strings: expected an array");
    d->nids = arr->via.array.size;
    d->ids = malloc((d->nids ? d->nids : 1) * sizeof *d->ids);
    if (!d->ids)
        return ROAST_ENOMEM;
    for (size_t i = 0; i < d->nids; i++) {
        roast_str s;
        if (!get_bytes(&arr->via.array.ptr[i], &s))
            return fail(d->err, d->errcap, "snapshot.strings[%zu]: expected a string", i);
        roast_status status = intern(d->agg, s, &d->ids[i]);
        if (status == ROAST_EFULL)
            return fail(d->err, d->errcap, "snapshot.strings: more than limits.max_strings");
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static roast_status dec_limits(const msgpack_object *map, roast_agg_limits *l, char *err,
                               size_t errcap)
{
    const msgpack_object *f[ROAST_NLIMITS];
    roast_status status = map_fields(map, roast_limit_keys, f, ROAST_NLIMITS, "snapshot.limits",
                                     err, errcap);
    if (status != ROAST_OK)
        return status;
    uint64_t v[ROAST_NLIMITS];
    for (int i = 0; i < ROAST_NLIMITS; i++) {
        uint64_t max = roast_limit_max(i);
        if (!get_uint(f[i], &v[i]) || v[i] > max)
            return fail(err, errcap, "snapshot.limits.%s: expected an unsigned integer up to %llu",
                        roast_limit_keys[i], (unsigned long long)max);
    }
    roast_limits_from_values(l, v);
    if (l->max_strings < 1)
        return fail(err, errcap, "snapshot.limits.max_strings: must be at least 1");
    return ROAST_OK;
}

static roast_status dec_counters(const msgpack_object *map, roast_agg_report *r, char *err,
                                 size_t errcap)
{
    const msgpack_object *f[ROAST_NCOUNTERS];
    roast_status status = map_fields_some(map, roast_counter_keys, f, ROAST_NCOUNTERS,
                                          ROAST_NCOUNTERS_REQUIRED, "snapshot.counters", err,
                                          errcap);
    if (status != ROAST_OK)
        return status;
    roast_cell v[ROAST_NCOUNTERS];
    for (int i = 0; i < ROAST_NCOUNTERS; i++) {
        v[i].u = 0;
        if (i == ROAST_COUNTER_HOOK_NS || !f[i])
            continue;
        if (!get_uint(f[i], &v[i].u))
            return fail(err, errcap, "snapshot.counters.%s: expected an unsigned integer",
                        roast_counter_keys[i]);
    }
    if (!get_number(f[ROAST_COUNTER_HOOK_NS], &v[ROAST_COUNTER_HOOK_NS].d))
        return fail(err, errcap, "snapshot.counters.hook_ns_per_call: expected a number");
    roast_report_from_cells(r, v);
    return ROAST_OK;
}

static roast_status dec_point(const snap_dec *d, const msgpack_object *o, roast_str worker,
                              size_t i, roast_series_point *p)
{
    size_t n = o->type == MSGPACK_OBJECT_ARRAY ? o->via.array.size : 0;
    if (n != 1 + ROAST_NCOLS && n != 3 + 3 * ROAST_NCOLS)
        return fail(d->err, d->errcap, "snapshot.series[\"%.*s\"][%zu]: expected an array of %d or %d",
                    (int)worker.len, worker.ptr, i, 1 + ROAST_NCOLS, 3 + 3 * ROAST_NCOLS);
    const msgpack_object *v = o->via.array.ptr;
    uint64_t count = 1;
    bool ok = get_number(&v[0], &p->t_first);
    if (n == 1 + ROAST_NCOLS) {
        p->t_last = p->t_first;
        for (int c = 0; c < ROAST_NCOLS && ok; c++) {
            ok = get_number(&v[1 + c], &p->mean[c]);
            p->min[c] = p->max[c] = p->mean[c];
        }
    } else {
        ok = ok && get_number(&v[1], &p->t_last) && get_uint(&v[2], &count);
        double *cols[3] = {p->min, p->max, p->mean};
        for (int k = 0; k < 3 && ok; k++)
            for (int c = 0; c < ROAST_NCOLS && ok; c++)
                ok = get_number(&v[3 + k * ROAST_NCOLS + c], &cols[k][c]);
    }
    if (!ok || count < 1 || count > UINT32_MAX || !(p->t_first <= p->t_last))
        return fail(d->err, d->errcap,
                    "snapshot.series[\"%.*s\"][%zu]: expected numbers, a count of at least 1 "
                    "and t_first <= t_last", (int)worker.len, worker.ptr, i);
    p->count = (uint32_t)count;
    return ROAST_OK;
}

static roast_status dec_series(snap_dec *d, const msgpack_object *map)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return fail(d->err, d->errcap, "snapshot.series: expected a map");
    roast_series *series = roast_agg_series(d->agg);
    const roast_intern *strings = roast_agg_strings_const(d->agg);
    for (uint32_t k = 0; k < map->via.map.size; k++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[k];
        roast_cell w;
        if (!read_cell(d, &kv->key, 's', &w))
            return fail(d->err, d->errcap, "snapshot.series: key %u is not a string index", (unsigned)k);
        roast_str name = roast_intern_get(strings, w.id);
        if (kv->val.type != MSGPACK_OBJECT_ARRAY)
            return fail(d->err, d->errcap, "snapshot.series[\"%.*s\"]: expected an array",
                        (int)name.len, name.ptr);
        for (size_t i = 0; i < kv->val.via.array.size; i++) {
            roast_series_point p;
            roast_status status = dec_point(d, &kv->val.via.array.ptr[i], name, i, &p);
            if (status != ROAST_OK)
                return status;
            status = roast_series_restore(series, w.id, &p);
            if (status == ROAST_EINVAL || status == ROAST_EFULL)
                return fail(d->err, d->errcap,
                            "snapshot.series[\"%.*s\"][%zu]: refused by the series store (before "
                            "the epoch, out of time order, or a bucket after single samples)",
                            (int)name.len, name.ptr, i);
            if (status != ROAST_OK)
                return status;
        }
    }
    return ROAST_OK;
}

/* The tables, S_WORKERS to S_ERRORS, in roast_tables order. */
enum {
    S_V, S_TAKEN_AT, S_STARTED, S_LIMITS, S_EPOCH, S_STRINGS, S_WORKERS, S_TASKS, S_DIGESTS,
    S_SPANS, S_RECORDS, S_ERRORS, S_COUNTERS, S_SERIES, S_NKEYS
};
static const char *const snapshot_keys[S_NKEYS] = {
    "v", "taken_at", "started", "limits", "series_epoch", "strings", "workers", "tasks",
    "digests", "spans", "records", "errors", "counters", "series"};

/* Everything before the tables: version, times, limits; creates the agg. */
static roast_status dec_header(snap_dec *d, const msgpack_object **f, double *taken_at)
{
    double started, epoch;
    if (!get_number(f[S_TAKEN_AT], taken_at))
        return fail(d->err, d->errcap, "snapshot.taken_at: expected a number");
    if (!get_number(f[S_STARTED], &started))
        return fail(d->err, d->errcap, "snapshot.started: expected a number");
    if (!get_number(f[S_EPOCH], &epoch))
        return fail(d->err, d->errcap, "snapshot.series_epoch: expected a number");
    if (memcmp(&epoch, &started, sizeof epoch) != 0) /* the same bits */
        return fail(d->err, d->errcap, "snapshot.series_epoch: differs from started");
    roast_agg_limits limits;
    roast_status status = dec_limits(f[S_LIMITS], &limits, d->err, d->errcap);
    if (status != ROAST_OK)
        return status;
    if (limits.series_cap_bytes < ROAST_SERIES_MIN_CAP)
        return fail(d->err, d->errcap, "snapshot.limits.series_cap_bytes: below the minimum of %d",
                    ROAST_SERIES_MIN_CAP);
    d->agg = roast_agg_new_restored(&limits, started);
    return d->agg ? ROAST_OK : ROAST_ENOMEM;
}

static roast_status dec_snapshot(snap_dec *d, const msgpack_object *top, double *taken_at)
{
    const msgpack_object *f[S_NKEYS];
    roast_status status = check_version(top, "snapshot", d->err, d->errcap);
    if (status == ROAST_OK)
        status = map_fields(top, snapshot_keys, f, S_NKEYS, "snapshot", d->err, d->errcap);
    if (status == ROAST_OK)
        status = dec_header(d, f, taken_at);
    if (status == ROAST_OK)
        status = dec_strings(d, f[S_STRINGS]);
    for (int t = 0; t < ROAST_NTABLES && status == ROAST_OK; t++)
        status = dec_table(d, f[S_WORKERS + t], &roast_tables[t]);
    roast_agg_report report;
    if (status == ROAST_OK)
        status = dec_counters(f[S_COUNTERS], &report, d->err, d->errcap);
    if (status == ROAST_OK)
        status = dec_series(d, f[S_SERIES]);
    if (status == ROAST_OK)
        roast_agg_restore_report(d->agg, &report);
    return status;
}

roast_status roast_wire_decode_snapshot(const char *data, size_t len, roast_agg **out,
                                        double *taken_at, char *err, size_t errcap)
{
    *out = NULL;
    if (!data && len)
        return ROAST_EINVAL;
    snap_dec d = {NULL, NULL, 0, err, errcap};
    double when = 0;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    roast_status status = wire_unpack(data, len, 1, &u, "snapshot", err, errcap);
    if (status == ROAST_OK)
        status = dec_snapshot(&d, &u.data, &when);
    msgpack_unpacked_destroy(&u);
    free(d.ids);
    if (status != ROAST_OK) {
        roast_agg_free(d.agg);
        return status;
    }
    if (taken_at)
        *taken_at = when;
    *out = d.agg;
    return ROAST_OK;
}
