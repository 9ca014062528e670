/* wire_pack: the encoders' msgpack sink and value forms.
 *
 * Doubles are packed in the smallest exact form: an integer when the value
 * is integral (never -0.0), else float32 when that converts back to the same
 * bits, else float64. Decoders accept any integer or float where a number is
 * expected, so every double round-trips bit for bit (NaN included). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wire_codec.h"

void roast_buf_free(roast_buf *buf)
{
    if (!buf)
        return;
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

int wire_out_write(void *data, const char *src, size_t len)
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

roast_status wire_out_finish(wire_out *o)
{
    if (!o->failed)
        return ROAST_OK;
    o->buf->len = o->start;
    return o->too_big ? ROAST_EFULL : ROAST_ENOMEM;
}

void wire_pack_key(msgpack_packer *pk, const char *key)
{
    size_t len = strlen(key);
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, key, len);
}

void wire_pack_str(msgpack_packer *pk, roast_str s)
{
    msgpack_pack_str(pk, s.len);
    msgpack_pack_str_body(pk, s.ptr, s.len);
}

void wire_pack_number(msgpack_packer *pk, double x)
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

