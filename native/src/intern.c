/* String interning: a uthash index over a dense array of owned strings.
 * Ids are array indices, so lookup by id is O(1) and ids never move.
 *
 * In front of the index sits a small direct-mapped memo of recent short
 * strings, each slot one cache line holding the string itself. The hook
 * interns a worker address and a prefix for every finished task, between
 * which the scheduler's own work evicts our memory from the CPU caches: a
 * uthash lookup then costs a miss on its table, its bucket, the entry and
 * the entry's string, the memo one. Ids never change, so a slot never goes
 * stale. */
#include "roast/intern.h"

#include "mix.h"

#include <stdbool.h>
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

/* Strings up to MEMO_BYTES long are memoized in MEMO_SLOTS slots. */
#define MEMO_SLOTS 256u
#define MEMO_BYTES 48u

typedef struct memo_slot {
    uint64_t hash;
    uint32_t len; /* 0: empty slot (the empty string needs no lookup) */
    roast_id id;
    char bytes[MEMO_BYTES];
} memo_slot;

_Static_assert(sizeof(memo_slot) == 64, "a memo slot is one cache line");

struct roast_intern {
    memo_slot memo[MEMO_SLOTS];
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

/* The memo's hash of a string of at most MEMO_BYTES bytes. */
static uint64_t memo_hash(const char *s, size_t len)
{
    uint64_t h = roast_mix64(len);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t word = 0;
        memcpy(&word, s + i, len - i < 8 ? len - i : 8);
        h = roast_mix64(h ^ word);
    }
    return h;
}


static bool memo_holds(const memo_slot *slot, const char *s, size_t len, uint64_t hash)
{
    return slot->len == len && slot->hash == hash && memcmp(slot->bytes, s, len) == 0;
}

/* Finds s in the index (not the memo). */
static int index_find(const roast_intern *t, const char *s, size_t len, roast_id *id)
{
    intern_entry *e = NULL;
    HASH_FIND(hh, t->index, s, len, e);
    if (!e)
        return 0;
    *id = e->id;
    return 1;
}

int roast_intern_find(const roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (len == 0) {
        *id = ROAST_ID_EMPTY;
        return 1;
    }
    if (len <= MEMO_BYTES) {
        uint64_t hash = memo_hash(s, len);
        const memo_slot *slot = &t->memo[hash & (MEMO_SLOTS - 1)];
        if (memo_holds(slot, s, len, hash)) {
            *id = slot->id;
            return 1;
        }
    }
    return index_find(t, s, len, id);
}

/* Finds s, through the memo, and remembers it there; false when absent. */
static int find_and_remember(roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (len == 0 || len > MEMO_BYTES)
        return roast_intern_find(t, s, len, id);
    uint64_t hash = memo_hash(s, len);
    memo_slot *slot = &t->memo[hash & (MEMO_SLOTS - 1)];
    if (memo_holds(slot, s, len, hash)) {
        *id = slot->id;
        return 1;
    }
    if (!index_find(t, s, len, id))
        return 0;
    slot->hash = hash;
    slot->len = (uint32_t)len;
    slot->id = *id;
    memcpy(slot->bytes, s, len);
    return 1;
}

roast_status roast_intern_put(roast_intern *t, const char *s, size_t len, roast_id *id)
{
    if (!t || !id || (len && !s))
        return ROAST_EINVAL;
    if (find_and_remember(t, s, len, id))
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
    if (find_and_remember(t, s, len, id))
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
