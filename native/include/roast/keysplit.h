/* keysplit: Dask's key_split (dask.utils.key_split) for string keys.
 *
 * The answer must equal dask's for every str key. Python's str.isalpha and
 * str.split() are Unicode-aware; native code knows nothing of Python, so the
 * caller injects those two character classes. The tuple, bytes and non-str
 * cases are the caller's (see plugin/): tuple -> first element, bytes ->
 * strict UTF-8 decode, anything else -> "Other".
 *
 * Results are cached by key in a direct-mapped table of at least
 * max_entries one-line slots (dask uses an LRU of 100,000); a key takes its
 * slot from the key that held it, and keys longer than 48 bytes are split
 * every time. */
#ifndef ROAST_KEYSPLIT_H
#define ROAST_KEYSPLIT_H

#include <stdbool.h>

#include "roast/common.h"
#include "roast/intern.h"

typedef struct roast_charclass {
    bool (*is_alpha)(uint32_t codepoint); /* Python str.isalpha of one code point */
    bool (*is_space)(uint32_t codepoint); /* whitespace for Python str.split() */
} roast_charclass;

/* ASCII-only classes, for tests and for callers without Unicode tables:
 * letters A-Z a-z, and the ASCII whitespace of Python's str.split() (\t \n
 * \v \f \r, space and U+001C..U+001F). Every other code point is neither. */
extern const roast_charclass roast_charclass_ascii;

/* key_split of a valid UTF-8 key of len bytes. Writes the prefix into out
 * (capacity outcap; len + 8 always suffices) and its length into *outlen.
 * Returns ROAST_EINVAL if outcap is too small (out also holds the
 * intermediate prefix the answer is cut from, never longer than len),
 * ROAST_EMALFORMED if key is not strict UTF-8 (overlong forms, surrogates and
 * truncated sequences included). The dask answers "Other" and "data" are
 * written as such; the answer may be empty (dask gives '' for '<a.>'). */
roast_status roast_key_split(const char *key, size_t len, const roast_charclass *cc,
                             char *out, size_t outcap, size_t *outlen);

typedef struct roast_keysplit_cache roast_keysplit_cache;

roast_keysplit_cache *roast_keysplit_cache_new(uint32_t max_entries, const roast_charclass *cc);
void roast_keysplit_cache_free(roast_keysplit_cache *cache);

/* Prefix id (interned in strings) of key. hash is the caller's hash of the
 * key bytes (e.g. Python's cached str hash); equal keys must give equal
 * hashes. Use roast_keysplit_hash when no hash is at hand. The cache keeps
 * ids, so every call on one cache must pass the same strings table. The
 * prefix is interned with roast_intern_put_foldable. Errors of
 * roast_key_split and of interning are returned and not cached. */
roast_status roast_keysplit_cached(roast_keysplit_cache *cache, roast_intern *strings,
                                   const char *key, size_t len, uint64_t hash,
                                   roast_id *prefix);

uint64_t roast_keysplit_hash(const char *key, size_t len);
uint64_t roast_keysplit_cache_hits(const roast_keysplit_cache *cache);
uint64_t roast_keysplit_cache_misses(const roast_keysplit_cache *cache);
uint64_t roast_keysplit_cache_evictions(const roast_keysplit_cache *cache);

#endif
