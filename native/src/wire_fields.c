/* wire_fields: typed fields of an unpacked msgpack tree; every check that
 * fails says where, through wire_fail. */
#include <string.h>

#include "wire_codec.h"



bool wire_get_number(const msgpack_object *o, double *out)
{
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *out = (double)o->via.u64; return true;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *out = (double)o->via.i64; return true;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *out = o->via.f64; return true;
    default: return false;
    }
}

bool wire_get_uint(const msgpack_object *o, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return false;
    *out = o->via.u64;
    return true;
}

bool wire_get_str(const msgpack_object *o, roast_str *out)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return false;
    out->ptr = o->via.str.ptr;
    out->len = o->via.str.size;
    return true;
}

/* Opaque bytes: bin, or str from packers that have no bin type. */
bool wire_get_bytes(const msgpack_object *o, roast_str *out)
{
    if (o->type == MSGPACK_OBJECT_BIN) {
        out->ptr = o->via.bin.ptr;
        out->len = o->via.bin.size;
        return true;
    }
    return wire_get_str(o, out);
}

bool wire_key_is(const msgpack_object *key, const char *name)
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
roast_status wire_map_fields_some(const msgpack_object *map, const char *const *names,
                                    const msgpack_object **values, size_t n, size_t required,
                                    const char *what, char *err, size_t errcap)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return wire_fail(err, errcap, "%s: expected a map", what);
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    for (uint32_t k = 0; k < map->via.map.size; k++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[k];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            return wire_fail(err, errcap, "%s: key %u is not a string", what, (unsigned)k);
        for (size_t i = 0; i < n; i++) {
            if (!wire_key_is(&kv->key, names[i]))
                continue;
            if (values[i])
                return wire_fail(err, errcap, "%s: duplicate key \"%s\"", what, names[i]);
            values[i] = &kv->val;
        }
    }
    for (size_t i = 0; i < required; i++)
        if (!values[i])
            return wire_fail(err, errcap, "%s: missing key \"%s\"", what, names[i]);
    return ROAST_OK;
}

roast_status wire_map_fields(const msgpack_object *map, const char *const *names,
                               const msgpack_object **values, size_t n, const char *what,
                               char *err, size_t errcap)
{
    return wire_map_fields_some(map, names, values, n, n, what, err, errcap);
}

/* The version is checked before anything else, so that a newer writer's
 * format is reported as such rather than as a missing or mistyped field. */
roast_status wire_check_version(const msgpack_object *map, const char *what, uint64_t oldest,
                                  uint64_t expected, uint64_t *found, char *err, size_t errcap)
{
    const msgpack_object *v = NULL;
    *found = expected;
    for (uint32_t k = 0; map->type == MSGPACK_OBJECT_MAP && k < map->via.map.size && !v; k++)
        if (wire_key_is(&map->via.map.ptr[k].key, "v"))
            v = &map->via.map.ptr[k].val;
    if (!v)
        return ROAST_OK; /* map_fields reports it missing */
    uint64_t version;
    if (!wire_get_uint(v, &version))
        return wire_fail(err, errcap, "%s.v: expected an unsigned integer", what);
    if (version > expected)
        return wire_fail(err, errcap, "%s: version %llu is newer than this build's version %llu",
                         what, (unsigned long long)version, (unsigned long long)expected);
    if (version < oldest)
        return wire_fail(err, errcap, "%s: unknown version %llu", what, (unsigned long long)version);
    *found = version;
    return ROAST_OK;
}

