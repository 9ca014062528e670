/* Shared vocabulary of the native engine: status codes and string ids. */
#ifndef ROAST_COMMON_H
#define ROAST_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* An interned string (see intern.h). Id 0 is always the empty string, which
 * stands for "absent" (no span, no prefix, no worker). */
typedef uint32_t roast_id;
#define ROAST_ID_EMPTY ((roast_id)0)

typedef enum roast_status {
    ROAST_OK = 0,
    ROAST_ENOMEM,     /* allocation failed */
    ROAST_EFULL,      /* a bounded store is at its cap; the item was counted, not kept */
    ROAST_EINVAL,     /* a caller broke the API contract */
    ROAST_EMALFORMED, /* outside bytes did not match the format */
    ROAST_EIO,        /* a file could not be read or written */
} roast_status;

/* A short constant English description of a status, for error messages. */
const char *roast_status_str(roast_status status);

#ifdef __GNUC__
#define ROAST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ROAST_PRINTF(f, a)
#endif

/* Writes the printf-style message into err (when err and errcap are given)
 * and returns status: how the decoders say why input was refused. */
roast_status ROAST_PRINTF(4, 5)
    roast_fail(roast_status status, char *err, size_t errcap, const char *fmt, ...);

/* A borrowed view of a UTF-8 string; not NUL-terminated. */
typedef struct roast_str {
    const char *ptr;
    size_t len;
} roast_str;

#endif
