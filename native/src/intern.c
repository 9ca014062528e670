/* String interning: a uthash index over a dense array of owned strings.
 * Ids are array indices, so lookup by id is O(1) and ids never move. */
#include "roast/intern.h"

#include <stdlib.h>
#include <string.h>

/* Out of memory inside uthash must not exit the scheduler: report it instead. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

typedef struct intern_entry {
    char *str; /* owned, NUL-terminated */
    size_t len;
    roast_id id;
    UT_hash_handle hh;
} intern_entry;

struct roast_intern {
    intern_entry *index;    /* uthash head, keyed by the string bytes */
    intern_entry **by_id;   /* by_id[id] */
    uint32_t count;
    uint32_t cap;           /* allocated length of by_id */
    uint32_t max_strings;
    uint32_t soft_cap;      /* foldable strings are not added beyond it */
    const char *bucket;     /* static; the string they are folded into */
    uint64_t overflows;
    uint64_t folds;
    size_t bytes;
};

static roast_status intern_add(roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (t->count >= t->max_strings) {
        t->overflows++;
        return ROAST_EFULL;
    }
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        intern_entry **grown = realloc(t->by_id, cap * sizeof *grown);
        if (!grown)
            return ROAST_ENOMEM;
        t->by_id = grown;
        t->cap = cap;
    }
    intern_entry *e = malloc(sizeof *e);
    char *copy = malloc(len + 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        return ROAST_ENOMEM;
    }
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    e->str = copy;
    e->len = len;
    e->id = t->count;
    HASH_ADD_KEYPTR(hh, t->index, e->str, e->len, e);
    if (!e->hh.tbl) { /* uthash could not allocate its table: not added */
        free(copy);
        free(e);
        return ROAST_ENOMEM;
    }
    t->by_id[t->count++] = e;
    t->bytes += sizeof *e + len + 1 + sizeof e;
    *id = e->id;
    return ROAST_OK;
}

roast_intern *roast_intern_new(uint32_t max_strings)
{
    if (max_strings < 1)
        return NULL;
    roast_intern *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->max_strings = max_strings;
    t->soft_cap = max_strings;
    roast_id empty;
    if (intern_add(t, "", 0, &empty) != ROAST_OK) {
        roast_intern_free(t);
        return NULL;
    }
    return t;
}

void roast_intern_free(roast_intern *t)
{
    if (!t)
        return;
    HASH_CLEAR(hh, t->index);
    for (uint32_t i = 0; i < t->count; i++) {
        free(t->by_id[i]->str);
        free(t->by_id[i]);
    }
    free(t->by_id);
    free(t);
}

int roast_intern_find(const roast_intern *t, const char *s, size_t len, roast_id *id)
{
    intern_entry *e = NULL;
    if (len == 0) {
        *id = ROAST_ID_EMPTY;
        return 1;
    }
    HASH_FIND(hh, t->index, s, len, e);
    if (!e)
        return 0;
    *id = e->id;
    return 1;
}

roast_status roast_intern_put(roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (!t || !id || (len && !s))
        return ROAST_EINVAL;
    if (roast_intern_find(t, s, len, id))
        return ROAST_OK;
    return intern_add(t, s, len, id);
}

void roast_intern_set_fold(roast_intern *t, uint32_t soft_cap, const char *bucket)
{
    t->soft_cap = soft_cap < t->max_strings ? soft_cap : t->max_strings;
    t->bucket = bucket;
}

roast_status roast_intern_put_foldable(roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (!t || !id || (len && !s))
        return ROAST_EINVAL;
    if (roast_intern_find(t, s, len, id))
        return ROAST_OK;
    if (!t->bucket || t->count < t->soft_cap)
        return intern_add(t, s, len, id);
    roast_status status = roast_intern_put(t, t->bucket, strlen(t->bucket), id);
    if (status == ROAST_OK)
        t->folds++;
    return status;
}

roast_str roast_intern_get(const roast_intern *t, roast_id id)
{
    roast_str view = {"", 0};
    if (t && id < t->count) {
        view.ptr = t->by_id[id]->str;
        view.len = t->by_id[id]->len;
    }
    return view;
}

uint32_t roast_intern_count(const roast_intern *t) { return t->count; }
uint64_t roast_intern_overflows(const roast_intern *t) { return t->overflows; }
uint64_t roast_intern_folds(const roast_intern *t) { return t->folds; }
size_t roast_intern_bytes(const roast_intern *t) { return sizeof *t + t->bytes; }
