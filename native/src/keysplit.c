/* keysplit: dask.utils.key_split for str keys, byte for byte.
 *
 * The Python original (dask/utils.py), for a str s, inside a try whose every
 * exception answers "Other":
 *
 *     words = s.split("-")
 *     if not words[0][0].isalpha():
 *         result = words[0].split(",")[0].strip("_'()\"")
 *     else:
 *         result = words[0]
 *     for word in words[1:]:
 *         if word.isalpha() and not (len(word) == 8 and hex_pattern.match(word)):
 *             result += "-" + word          # hex_pattern = "[a-f]+"
 *         else:
 *             break
 *     if len(result) == 32 and re.match(r"[a-f0-9]{32}", result):
 *         return "data"
 *     if result[0] == "<":
 *         result = result.strip("<>").split()[0].split(".")[-1]
 *     return result
 *
 * Every separator and stripped character is ASCII, and UTF-8 never uses an
 * ASCII byte inside a multi-byte character, so the port works on bytes and
 * decodes code points only where Python looks at them: isalpha, len and the
 * whitespace split. The exceptions are words[0][0] on an empty first word
 * ("" and keys starting with '-'), result[0] on an empty result ('__') and
 * split()[0] with nothing but '<', '>' and whitespace ('<>').
 *
 * result is words[0] (perhaps stripped) followed by the accepted "-word"s,
 * which are contiguous in the key: two byte ranges of the key. */
#include "roast/keysplit.h"

#include "mix.h"

#include <stdlib.h>
#include <string.h>


static const char OTHER[] = "Other";
static const char DATA[] = "data";

/* ---- UTF-8 and character classes ---------------------------------------- */

/* Decodes the code point at s (n bytes available) into *cp and returns its
 * length, or 0 if the bytes are not strict UTF-8: no overlong forms, no
 * surrogates, nothing above U+10FFFF, no truncated sequence. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t c;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2;
        c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        c = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0; /* overlong */
        if (b == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        c = b & 0x07;
        if (b == 0xF0)
            lo = 0x90; /* overlong */
        if (b == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    c = (c << 6) | (s[1] & 0x3F);
    for (size_t i = 2; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    *cp = c;
    return len;
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_next(s + i, n - i, &cp);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

static bool ascii_is_alpha(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Python's str.split() also splits on the ASCII separators U+001C..U+001F. */
static bool ascii_is_space(uint32_t c) { return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20); }

const roast_charclass roast_charclass_ascii = {ascii_is_alpha, ascii_is_space};

/* ---- key_split ---------------------------------------------------------- */

static size_t find_byte(const unsigned char *s, size_t from, size_t to, unsigned char c)
{
    const unsigned char *p = memchr(s + from, c, to - from);
    return p ? (size_t)(p - s) : to;
}

/* Python's word.isalpha() (false when empty) for s[0, n); counts code
 * points into *ncp. */
static bool word_is_alpha(const unsigned char *s, size_t n, const roast_charclass *cc, size_t *ncp)
{
    size_t count = 0;
    for (size_t i = 0; i < n; count++) {
        uint32_t cp = 0;
        i += utf8_next(s + i, n - i, &cp);
        if (!cc->is_alpha(cp))
            return false;
    }
    *ncp = count;
    return n > 0;
}

static bool is_first_word_junk(unsigned char c)
{
    return c == '_' || c == '\'' || c == '(' || c == ')' || c == '"';
}

static bool is_lower_hex(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

static roast_status answer(const char *text, size_t len, char *out, size_t outcap, size_t *outlen)
{
    if (outcap < len)
        return ROAST_EINVAL;
    memcpy(out, text, len);
    *outlen = len;
    return ROAST_OK;
}

/* result.strip("<>").split()[0].split(".")[-1], in place on out[0, len). */
static roast_status angle_prefix(char *out, size_t len, const roast_charclass *cc, size_t outcap,
                                 size_t *outlen)
{
    const unsigned char *s = (const unsigned char *)out;
    size_t a = 0, b = len;
    while (a < b && (s[a] == '<' || s[a] == '>'))
        a++;
    while (b > a && (s[b - 1] == '<' || s[b - 1] == '>'))
        b--;
    uint32_t cp;
    size_t k;
    while (a < b && (k = utf8_next(s + a, b - a, &cp)) && cc->is_space(cp))
        a += k;
    if (a == b)
        return answer(OTHER, sizeof OTHER - 1, out, outcap, outlen); /* split() is empty */
    size_t end = a;
    while (end < b && (k = utf8_next(s + end, b - end, &cp)) && !cc->is_space(cp))
        end += k;
    size_t dot = end;
    while (dot > a && s[dot - 1] != '.')
        dot--;
    memmove(out, out + dot, end - dot);
    *outlen = end - dot;
    return ROAST_OK;
}

roast_status roast_key_split(const char *key, size_t len, const roast_charclass *cc, char *out,
                             size_t outcap, size_t *outlen)
{
    if (!cc || !out || !outlen || (len && !key))
        return ROAST_EINVAL;
    const unsigned char *s = (const unsigned char *)key;
    if (!utf8_valid(s, len))
        return ROAST_EMALFORMED;
    if (len == 0)
        return answer(OTHER, sizeof OTHER - 1, out, outcap, outlen);

    size_t first_end = find_byte(s, 0, len, '-'); /* words[0] is s[0, first_end) */
    if (first_end == 0)
        return answer(OTHER, sizeof OTHER - 1, out, outcap, outlen);
    uint32_t cp;
    utf8_next(s, len, &cp);
    size_t head = 0, head_end = first_end;
    if (!cc->is_alpha(cp)) {
        head_end = find_byte(s, 0, first_end, ',');
        while (head < head_end && is_first_word_junk(s[head]))
            head++;
        while (head_end > head && is_first_word_junk(s[head_end - 1]))
            head_end--;
    }

    /* Accept "-word"s while each is alphabetic and not an 8-letter word
     * starting with a-f (a hex-looking token). tail_end ends the last one. */
    size_t tail_end = first_end;
    while (tail_end < len) {
        size_t start = tail_end + 1, end = find_byte(s, start, len, '-'), ncp;
        if (!word_is_alpha(s + start, end - start, cc, &ncp) ||
            (ncp == 8 && s[start] >= 'a' && s[start] <= 'f'))
            break;
        tail_end = end;
    }

    size_t head_len = head_end - head, tail_len = tail_end - first_end;
    size_t result_len = head_len + tail_len;
    if (result_len == 32 && is_lower_hex(s + head, head_len) && is_lower_hex(s + first_end, tail_len))
        return answer(DATA, sizeof DATA - 1, out, outcap, outlen);
    if (result_len == 0)
        return answer(OTHER, sizeof OTHER - 1, out, outcap, outlen);
    if (outcap < result_len)
        return ROAST_EINVAL;
    memcpy(out, s + head, head_len);
    memcpy(out + head_len, s + first_end, tail_len);
    if (out[0] == '<')
        return angle_prefix(out, result_len, cc, outcap, outlen);
    *outlen = result_len;
    return ROAST_OK;
}

/* ---- the cache ---------------------------------------------------------- */

/* Direct-mapped: a key has one slot, of one cache line holding the key
 * itself. The hook runs between pieces of the scheduler's own work, which
 * evict our memory from the CPU caches: a lookup must cost one miss, not a
 * walk along a hash chain. A key takes its slot from whoever held it; keys
 * longer than CACHED_BYTES are split every time. */
#define CACHED_BYTES 48u

typedef struct cache_slot {
    uint64_t hash;
    uint32_t len; /* 0: empty (the empty key is never cached) */
    roast_id prefix;
    char key[CACHED_BYTES];
} cache_slot;

_Static_assert(sizeof(cache_slot) == 64, "a cache slot is one cache line");

struct roast_keysplit_cache {
    cache_slot *slots;
    uint32_t mask; /* slots - 1, a power of two minus one */
    roast_charclass cc;
    uint64_t hits, misses, evictions;
};

roast_keysplit_cache *roast_keysplit_cache_new(uint32_t max_entries, const roast_charclass *cc)
{
    if (max_entries == 0 || max_entries > (1u << 30) || !cc)
        return NULL;
    uint32_t slots = 1;
    while (slots < max_entries)
        slots <<= 1;
    roast_keysplit_cache *cache = calloc(1, sizeof *cache);
    if (cache)
        cache->slots = calloc(slots, sizeof *cache->slots);
    if (!cache || !cache->slots) {
        free(cache);
        return NULL;
    }
    cache->mask = slots - 1;
    cache->cc = *cc;
    return cache;
}

void roast_keysplit_cache_free(roast_keysplit_cache *cache)
{
    if (!cache)
        return;
    free(cache->slots);
    free(cache);
}

static cache_slot *slot_of(const roast_keysplit_cache *cache, uint64_t hash)
{
    return &cache->slots[(hash ^ (hash >> 32)) & cache->mask];
}

static void cache_put(roast_keysplit_cache *cache, const char *key, size_t len, uint64_t hash,
                      roast_id prefix)
{
    cache_slot *slot = slot_of(cache, hash);
    if (slot->len)
        cache->evictions++;
    slot->hash = hash;
    slot->len = (uint32_t)len;
    slot->prefix = prefix;
    memcpy(slot->key, key, len);
}

roast_status roast_keysplit_cached(roast_keysplit_cache *cache, roast_intern *strings,
                                   const char *key, size_t len, uint64_t hash, roast_id *prefix)
{
    if (!cache || !strings || !prefix || (len && !key))
        return ROAST_EINVAL;
    if (len == 0)
        key = ""; /* the empty key may come as NULL */
    bool cacheable = len > 0 && len <= CACHED_BYTES;
    if (cacheable) {
        const cache_slot *slot = slot_of(cache, hash);
        if (slot->len == len && slot->hash == hash && memcmp(slot->key, key, len) == 0) {
            cache->hits++;
            *prefix = slot->prefix;
            return ROAST_OK;
        }
    }
    cache->misses++;
    char small[256];
    size_t cap = len + 8;
    char *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return ROAST_ENOMEM;
    size_t n;
    roast_status st = roast_key_split(key, len, &cache->cc, buf, cap, &n);
    if (st == ROAST_OK)
        st = roast_intern_put_foldable(strings, buf, n, prefix);
    if (buf != small)
        free(buf);
    if (st == ROAST_OK && cacheable)
        cache_put(cache, key, len, hash, *prefix);
    return st;
}

/* ---- hashing ------------------------------------------------------------ */

/* Eight bytes at a time, each word mixed before it is combined, the length
 * folded into the seed so that trailing zero bytes change the hash. Values
 * depend on the byte order of the machine; they never leave the process. */
uint64_t roast_keysplit_hash(const char *key, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ roast_mix64(len);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, key + i, 8);
        h = (h ^ roast_mix64(word)) * 0xFF51AFD7ED558CCDull;
        h = (h << 31) | (h >> 33);
    }
    uint64_t rest = 0;
    if (i < len)
        memcpy(&rest, key + i, len - i);
    return roast_mix64(h ^ roast_mix64(rest ^ 0x2545F4914F6CDD1Dull));
}

uint64_t roast_keysplit_cache_hits(const roast_keysplit_cache *cache) { return cache->hits; }
uint64_t roast_keysplit_cache_misses(const roast_keysplit_cache *cache) { return cache->misses; }
uint64_t roast_keysplit_cache_evictions(const roast_keysplit_cache *cache) { return cache->evictions; }
