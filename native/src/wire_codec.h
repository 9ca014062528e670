/* wire_codec: what the msgpack codecs of wire.h share (private to native/).
 *
 * wire_pack.c writes (a roast_buf sink for msgpack_packer and the number
 * form), wire_scan.c checks hostile input before msgpack-c unpacks it, and
 * wire_fields.c reads typed fields out of the unpacked tree. payload.c,
 * snapshot_encode.c and snapshot_decode.c are the formats built on them. */
#ifndef ROAST_WIRE_CODEC_H
#define ROAST_WIRE_CODEC_H

#include <msgpack.h>
#include <stdbool.h>

#include "roast/wire.h"

/* Bytes per element, on average, of any worker payload DigestTracker writes:
 * digest rows carry a context, an activity and a unit of several bytes each.
 * The decoder's object tree then costs at most 8 times the payload. */
#define PAYLOAD_MIN_BYTES 3

/* Writes the message to err (when given) and returns ROAST_EMALFORMED. */
#define wire_fail(err, errcap, ...) roast_fail(ROAST_EMALFORMED, err, errcap, __VA_ARGS__)

/* ---- wire_pack.c ---------------------------------------------------------- */

/* The packer's sink. After the first failure every write fails, so encoders
 * need not check each pack call: they check `failed` once at the end. */
typedef struct wire_out {
    roast_buf *buf;
    size_t start; /* buf->len before encoding, restored on failure */
    bool failed;
    bool too_big; /* the failure was the ROAST_WIRE_MAX_BYTES bound */
} wire_out;

int wire_out_write(void *data, const char *src, size_t len);
/* Ends an encoding: ENOMEM and EFULL (output above ROAST_WIRE_MAX_BYTES) leave
 * buf as it was. */
roast_status wire_out_finish(wire_out *o);
void wire_pack_key(msgpack_packer *pk, const char *key);
void wire_pack_str(msgpack_packer *pk, roast_str s);
/* A double in its smallest exact form (see wire_pack.c). */
void wire_pack_number(msgpack_packer *pk, double x);

/* ---- wire_scan.c ---------------------------------------------------------- */

/* Scans, then unpacks data into u, refusing input denser than min_bytes per
 * element on average. The caller destroys u. */
roast_status wire_unpack(const char *data, size_t len, size_t min_bytes, msgpack_unpacked *u,
                         const char *what, char *err, size_t errcap);

/* ---- wire_fields.c -------------------------------------------------------- */

bool wire_get_number(const msgpack_object *o, double *out);
bool wire_get_uint(const msgpack_object *o, uint64_t *out);
bool wire_get_str(const msgpack_object *o, roast_str *out);
bool wire_get_bytes(const msgpack_object *o, roast_str *out);
bool wire_key_is(const msgpack_object *key, const char *name);
/* Finds the n named fields of a map; names from index `required` on may be
 * absent (NULL). Unknown keys are ignored, duplicates refused. */
roast_status wire_map_fields_some(const msgpack_object *map, const char *const *names,
                                  const msgpack_object **values, size_t n, size_t required,
                                  const char *what, char *err, size_t errcap);
/* wire_map_fields_some with every name required. */
roast_status wire_map_fields(const msgpack_object *map, const char *const *names,
                             const msgpack_object **values, size_t n, const char *what,
                             char *err, size_t errcap);
/* The version is checked before anything else, so that a newer writer's
 * format is reported as such rather than as a missing or mistyped field:
 * versions oldest to expected are read, *found says which (expected when the
 * map has none: map_fields reports it missing). */
roast_status wire_check_version(const msgpack_object *map, const char *what, uint64_t oldest,
                                uint64_t expected, uint64_t *found, char *err, size_t errcap);

#endif
