/* wire_scan: hostile input, checked before msgpack-c builds anything.
 *
 * A first pass (wire_scan) walks the bytes without allocating and checks
 * every declared length against the bytes left, the nesting depth, and that
 * all elements promised so far could still fit in the rest of the input
 * (each needs at least one byte). Only then does msgpack_unpack_next build
 * its object tree, whose size is thereby bounded by one msgpack_object per
 * input byte. The tree's strings are views into the input (msgpack-c
 * references, it does not copy). */
#include <string.h>

#include "wire_codec.h"

/* Deep enough for every format here (a snapshot nests 4 levels), well under
 * msgpack-c's own fixed stack of 32. */
#define WIRE_MAX_DEPTH 16

/* Inputs of up to this many elements are not held to a density bound. */
#define WIRE_SMALL_OBJECTS 4096

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
            return wire_fail(err, errcap, "%s: truncated at byte %zu", what, pos);
        uint8_t b = p[pos++];
        scan_item it = scan_type(b);
        if (!it.ok)
            return wire_fail(err, errcap, "%s: invalid msgpack type byte 0x%02x at byte %zu", what, b, pos - 1);
        if ((uint64_t)it.header > len - pos)
            return wire_fail(err, errcap, "%s: truncated at byte %zu", what, pos);
        if (it.len_bytes) {
            uint64_t n = load_be(p + pos, it.len_bytes);
            if (b >= 0xdc)
                it.items = b >= 0xde ? 2 * n : n;
            else
                it.body = n;
        }
        pos += (size_t)it.header;
        if (it.body > len - pos)
            return wire_fail(err, errcap, "%s: byte %zu declares %llu bytes, only %zu left", what,
                        pos, (unsigned long long)it.body, len - pos);
        pos += (size_t)it.body;
        if (it.items) {
            if (depth == WIRE_MAX_DEPTH)
                return wire_fail(err, errcap, "%s: nested deeper than %d at byte %zu", what,
                            WIRE_MAX_DEPTH, pos);
            /* a string body may have eaten bytes promised to pending items */
            if (pending > len - pos || it.items > len - pos - pending)
                return wire_fail(err, errcap, "%s: byte %zu declares %llu elements, only %zu bytes left",
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
roast_status wire_unpack(const char *data, size_t len, size_t min_bytes,
                         msgpack_unpacked *u, const char *what, char *err, size_t errcap)
{
    if (len > ROAST_WIRE_MAX_BYTES)
        return wire_fail(err, errcap, "%s: %zu bytes, above the limit of %zu", what, len,
                    ROAST_WIRE_MAX_BYTES);
    if (len == 0)
        return wire_fail(err, errcap, "%s: empty input", what);
    size_t end = 0;
    uint64_t objects = 0;
    roast_status status = wire_scan((const uint8_t *)data, len, &end, &objects, what, err, errcap);
    if (status != ROAST_OK)
        return status;
    if (end != len)
        return wire_fail(err, errcap, "%s: %zu trailing bytes after the top object", what, len - end);
    if (objects > WIRE_SMALL_OBJECTS && objects > len / min_bytes)
        return wire_fail(err, errcap,
                    "%s: %llu elements in %zu bytes, denser than %zu bytes per element", what,
                    (unsigned long long)objects, len, min_bytes);
    size_t off = 0;
    msgpack_unpack_return rc = msgpack_unpack_next(u, data, len, &off);
    if (rc == MSGPACK_UNPACK_NOMEM_ERROR)
        return ROAST_ENOMEM;
    if (rc != MSGPACK_UNPACK_SUCCESS || off != len)
        return wire_fail(err, errcap, "%s: not valid msgpack", what);
    return ROAST_OK;
}

