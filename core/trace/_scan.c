/* Kineto trace events -> columns in one pass, without a Python object per event.
 *
 * scan(buf, start, end) reads the events in buf[start:end) -- `{...}, {...}` optionally wrapped in
 * `[` `]` -- and returns two sets of column buffers: "rows", the X/B/E events that have a ts (nearly
 * all events: the model's slices, in file order, so Python selects nothing), and "other", every other
 * event (instants, flows, counters, metadata, events without a ts; one value per event each), plus the
 * chunk's interned strings; or None when anything in the range is not plain, strictly valid JSON of the shape the
 * typed msgspec decoder (core/trace/kineto.py: Event, Args) accepts. None sends the range down the
 * Python path, which handles every quirk (unquoted N/A, truncation, odd types) exactly as before:
 * this file is only an accelerator, and tests/core/trace/test_scan.py checks that both paths give
 * identical columns on every shared trace.
 *
 * What the columns hold mirrors core/trace/columns.py:
 *   ph int8 (phase code), ts/dur int64 ns exactly as written (the µs number's decimal digits shifted three
 *   places, rounded half to even past the ns digit: parse_ns; NS_MISSING = missing, NS_HIGH / NS_LOW =
 *   beyond +-2^62 ns), name/cat int32 (string ids, 0 = ""),
 *   pid/tid/id int64 codes (a string becomes STR_CODE_BASE - string id; id null -> NONE),
 *   the int args (NONE or 0 when missing or null), the raw-JSON args (grid, block, Input Dims /
 *   Strides / type) as ids of their exact JSON text, Call stack as a string id, occupancy float64,
 *   and the (index into "other", start, end) byte spans of "M" and "C" events, whose free-form args
 *   Python reads.
 * Every string is interned as at most max_len bytes (scan's optional 4th argument; cut at a UTF-8 character
 * boundary, counted in "cut"): a 200 MB event name costs one pass over its bytes, not a 200 MB str.
 * Member keys are matched as literals in the buffer, numbers of the usual shapes by a short fast path
 * (fast_number), strings 16 bytes per step (SSE2).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { PH_X, PH_B, PH_E, PH_INSTANT, PH_FLOW_S, PH_FLOW_F, PH_FLOW_T, PH_META, PH_COUNTER, PH_OTHER };

#define NONE_I ((int64_t)-1)
#define STR_CODE_BASE (-((int64_t)1 << 60))
#define CODE_MIN (-((int64_t)1 << 59))
#define CODE_MAX (((int64_t)1 << 62))
#define MAX_DEPTH 512
/* ts / dur sentinels (core/trace/timens.py): missing, and beyond +-2^62 ns (1e300 µs; sanitize drops those) */
#define NS_MISSING INT64_MIN
#define NS_LOW (INT64_MIN + 1)
#define NS_HIGH INT64_MAX
#define NS_LIMIT ((uint64_t)1 << 62)

/* --- args the model keeps -------------------------------------------------------------------- */
enum { A_EXTERNAL_ID, A_CORRELATION, A_STREAM, A_DEVICE, A_BYTES, A_REGISTERS, A_PYTHON_ID,
       A_PYTHON_PARENT_ID, A_SEQ, A_DEVICE_ID, A_DEVICE_TYPE, A_TOTAL_ALLOCATED, A_TOTAL_RESERVED,
       A_MEM_BYTES, A_ADDR, N_INT_ARGS };
static const char *INT_KEYS[N_INT_ARGS] = {
    "External id", "correlation", "stream", "device", "bytes", "registers per thread", "Python id",
    "Python parent id", "Sequence number", "Device Id", "Device Type", "Total Allocated",
    "Total Reserved", "Bytes", "Addr"};
static const char *INT_NAMES[N_INT_ARGS] = {
    "external_id", "correlation", "stream", "device", "bytes", "registers", "python_id",
    "python_parent_id", "seq", "device_id", "device_type", "total_allocated", "total_reserved",
    "mem_bytes", "addr"};
static const int64_t INT_DEFAULT[N_INT_ARGS] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0};

enum { R_GRID, R_BLOCK, R_INPUT_DIMS, R_INPUT_STRIDES, R_INPUT_TYPES, N_RAW_ARGS };
static const char *RAW_KEYS[N_RAW_ARGS] = {"grid", "block", "Input Dims", "Input Strides", "Input type"};
static const char *RAW_NAMES[N_RAW_ARGS] = {"grid", "block", "input_dims", "input_strides", "input_types"};

/* --- growable columns ------------------------------------------------------------------------ */
typedef struct {
    Py_ssize_t n, cap, filled;  /* rows [n, filled) already hold the defaults (cols_defaults) */
    int8_t *ph;
    int64_t *ts, *dur;
    double *occ;
    int32_t *name, *cat, *cstack;
    int64_t *pid, *tid, *id, *off;  /* off: byte offset of the event's '{' from the buffer start */
    int64_t *ints[N_INT_ARGS];
    int32_t *raws[N_RAW_ARGS];
    Py_ssize_t nspan, spancap;
    int64_t *span;  /* triples: event index, start, end */
} Cols;

#define ALL_COLS(X)                                                                                \
    X(ph) X(ts) X(dur) X(occ) X(name) X(cat) X(cstack) X(pid) X(tid) X(id) X(off)

static void cols_free(Cols *c) {
#define FREE1(f) free(c->f);
    ALL_COLS(FREE1)
#undef FREE1
    for (int k = 0; k < N_INT_ARGS; k++) free(c->ints[k]);
    for (int k = 0; k < N_RAW_ARGS; k++) free(c->raws[k]);
    free(c->span);
}

static int grow_one(void **p, Py_ssize_t cap, size_t size) {
    void *q = realloc(*p, (size_t)cap * size);
    if (!q) return -1;
    *p = q;
    return 0;
}

static int cols_reserve(Cols *c, Py_ssize_t need) {
    if (need <= c->cap) return 0;
    Py_ssize_t cap = c->cap ? c->cap : 4096;
    while (cap < need) cap *= 2;
#define GROW1(f) if (grow_one((void **)&c->f, cap, sizeof(*c->f))) return -1;
    ALL_COLS(GROW1)
#undef GROW1
    for (int k = 0; k < N_INT_ARGS; k++)
        if (grow_one((void **)&c->ints[k], cap, sizeof(int64_t))) return -1;
    for (int k = 0; k < N_RAW_ARGS; k++)
        if (grow_one((void **)&c->raws[k], cap, sizeof(int32_t))) return -1;
    c->cap = cap;
    return 0;
}

/* slot i of c -> slot j of o (o has room) */
static void cols_move(Cols *c, Py_ssize_t i, Cols *o, Py_ssize_t j) {
#define MOVE1(f) o->f[j] = c->f[i];
    ALL_COLS(MOVE1)
#undef MOVE1
    for (int k = 0; k < N_INT_ARGS; k++) o->ints[k][j] = c->ints[k][i];
    for (int k = 0; k < N_RAW_ARGS; k++) o->raws[k][j] = c->raws[k][i];
}

/* Rows [a, b) of c set to what an event without the member holds, a column at a time (parse_event
   asks for a block ahead: 20 scattered stores per event were 3 % of a load) */
static void cols_defaults(Cols *c, Py_ssize_t a, Py_ssize_t b) {
    size_t n = (size_t)(b - a);
    memset(c->ph + a, PH_OTHER, n);
    for (Py_ssize_t r = a; r < b; r++) {
        c->ts[r] = c->dur[r] = NS_MISSING;
        c->occ[r] = NAN;
    }
    memset(c->name + a, 0, n * sizeof(int32_t));
    memset(c->cat + a, 0, n * sizeof(int32_t));
    memset(c->cstack + a, 0, n * sizeof(int32_t));
    memset(c->pid + a, 0, n * sizeof(int64_t));
    memset(c->tid + a, 0, n * sizeof(int64_t));
    memset(c->id + a, 0xff, n * sizeof(int64_t)); /* NONE_I */
    for (int k = 0; k < N_INT_ARGS; k++) {
        if (INT_DEFAULT[k] == -1) memset(c->ints[k] + a, 0xff, n * sizeof(int64_t));
        else for (Py_ssize_t r = a; r < b; r++) c->ints[k][r] = INT_DEFAULT[k];
    }
    for (int k = 0; k < N_RAW_ARGS; k++) memset(c->raws[k] + a, 0, n * sizeof(int32_t));
}

#define DEFAULTS_AHEAD 1024

/* --- string interning (final UTF-8 text -> dense id, 0 = "") --------------------------------- */
typedef struct {
    uint64_t hash;
    const char *ptr;
    Py_ssize_t len;
    int32_t id;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
    int32_t n;            /* ids handed out (index 0 = "") */
    int32_t cap_ids;
    const char **ptrs;    /* by id */
    Py_ssize_t *lens;
    char **arena;         /* decoded escaped strings */
    size_t narena, arenacap;
    Py_ssize_t max_len;   /* longer strings are cut to this many bytes (at a UTF-8 character boundary) */
    Py_ssize_t ncut;      /* how many were */
} Strings;

static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    return h;
}

static int strings_init(Strings *s) {
    memset(s, 0, sizeof(*s));
    s->mask = 4095;
    s->slots = calloc(s->mask + 1, sizeof(Slot));
    s->cap_ids = 1024;
    s->ptrs = malloc(sizeof(char *) * s->cap_ids);
    s->lens = malloc(sizeof(Py_ssize_t) * s->cap_ids);
    if (!s->slots || !s->ptrs || !s->lens) return -1;
    s->ptrs[0] = "";
    s->lens[0] = 0;
    s->n = 1;
    s->max_len = PY_SSIZE_T_MAX;
    return 0;
}

static void strings_free(Strings *s) {
    free(s->slots);
    free(s->ptrs);
    free(s->lens);
    for (size_t i = 0; i < s->narena; i++) free(s->arena[i]);
    free(s->arena);
}

static int strings_rehash(Strings *s) {
    size_t mask = s->mask * 2 + 1;
    Slot *slots = calloc(mask + 1, sizeof(Slot));
    if (!slots) return -1;
    for (size_t i = 0; i <= s->mask; i++) {
        Slot *o = &s->slots[i];
        if (!o->id) continue;
        size_t j = o->hash & mask;
        while (slots[j].id) j = (j + 1) & mask;
        slots[j] = *o;
    }
    free(s->slots);
    s->slots = slots;
    s->mask = mask;
    return 0;
}

/* id of the text p[0:len) (which must stay alive until the end of the scan); -1 on no memory */
static int32_t intern(Strings *s, const char *p, Py_ssize_t len) {
    if (len == 0) return 0;
    if (len > s->max_len) { /* a 200 MB event name: cut and interned as its first max_len bytes */
        len = s->max_len;
        while (len > 0 && ((unsigned char)p[len] & 0xC0) == 0x80) len--;
        s->ncut++;
        if (len == 0) return 0;
    }
    uint64_t h = hash_bytes((const unsigned char *)p, (size_t)len);
    size_t j = h & s->mask;
    for (;;) {
        Slot *sl = &s->slots[j];
        if (!sl->id) break;
        if (sl->hash == h && sl->len == len && memcmp(sl->ptr, p, (size_t)len) == 0) return sl->id;
        j = (j + 1) & s->mask;
    }
    if (s->n == INT32_MAX) return -1;
    if (s->n >= s->cap_ids) {
        int32_t cap = s->cap_ids * 2;
        const char **ptrs = realloc(s->ptrs, sizeof(char *) * cap);
        if (!ptrs) return -1;
        s->ptrs = ptrs;
        Py_ssize_t *lens = realloc(s->lens, sizeof(Py_ssize_t) * cap);
        if (!lens) return -1;
        s->lens = lens;
        s->cap_ids = cap;
    }
    int32_t id = s->n++;
    s->ptrs[id] = p;
    s->lens[id] = len;
    Slot *sl = &s->slots[j];
    sl->hash = h;
    sl->ptr = p;
    sl->len = len;
    sl->id = id;
    if ((size_t)s->n * 2 > s->mask) {
        if (strings_rehash(s)) return -1;
    }
    return id;
}

static char *arena_alloc(Strings *s, size_t n) {
    if (s->narena == s->arenacap) {
        size_t cap = s->arenacap ? s->arenacap * 2 : 64;
        char **a = realloc(s->arena, sizeof(char *) * cap);
        if (!a) return NULL;
        s->arena = a;
        s->arenacap = cap;
    }
    char *p = malloc(n ? n : 1);
    if (p) s->arena[s->narena++] = p;
    return p;
}

/* --- the parser ------------------------------------------------------------------------------ */
#define MAX_KEYS 40 /* member keys a table matches (see member_key) */
#define MAX_KEY_LEN 32
typedef struct {
    const char *p, *end, *base;
    Strings *st;
    int oom;
    PyThreadState *saved;  /* the GIL is released while scanning; the rare slow number path takes it */
    uint8_t succ_top[MAX_KEYS + 2], succ_arg[MAX_KEYS + 2]; /* member_key's guesses of the next key */
} P;

#define FAIL return -1

/* Whitespace. Kineto writes "\n" + spaces (indentation) or one space: after a '\n' or ' ' the spaces that
   follow are counted in one 8-byte load; anything else takes the byte loop. */
static inline void ws(P *x) {
    const char *p = x->p, *e = x->end;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (e - p >= 9) {
        unsigned char c = (unsigned char)*p;
        if (c > ' ') return;
        if (c == ' ' || c == '\n') {
            uint64_t v;
            memcpy(&v, p + 1, 8);
            v ^= 0x2020202020202020ULL; /* spaces -> 0 */
            if (v) {
                p += 1 + (__builtin_ctzll(v) >> 3); /* little-endian: the first non-space byte */
                if ((unsigned char)*p > ' ') {
                    x->p = p;
                    return;
                }
            } else {
                p += 9;
            }
        }
    }
#endif
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    x->p = p;
}

static inline int peek(P *x) { return x->p < x->end ? (unsigned char)*x->p : -1; }

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Strict UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF), as msgspec checks it. */
static int valid_utf8(const unsigned char *p, const unsigned char *e) {
    while (p < e) {
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        int n;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) n = 1;
        else if (c == 0xE0) { n = 2; lo = 0xA0; }
        else if (c >= 0xE1 && c <= 0xEC) n = 2;
        else if (c == 0xED) { n = 2; hi = 0x9F; }
        else if (c >= 0xEE && c <= 0xEF) n = 2;
        else if (c == 0xF0) { n = 3; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) n = 3;
        else if (c == 0xF4) { n = 3; hi = 0x8F; }
        else return 0;
        if (e - p <= n) return 0;
        if (p[1] < lo || p[1] > hi) return 0;
        for (int k = 2; k <= n; k++)
            if (p[k] < 0x80 || p[k] > 0xBF) return 0;
        p += n + 1;
    }
    return 1;
}

/* A JSON string at x->p (the opening quote). Sets *out/*len to its decoded UTF-8 text (pointing
   into the buffer when it has no escapes). Invalid JSON (control characters, bad escapes, lone
   surrogates) fails: msgspec rejects those too. */
static int parse_string(P *x, const char **out, Py_ssize_t *len) {
    const char *p = x->p + 1, *e = x->end, *s = p;
    int escaped = 0;
    uint64_t high = 0;  /* any byte >= 0x80: the string must then be valid UTF-8 */
#if defined(__SSE2__)
    /* 16 bytes at a time (SSE2 is part of x86-64): stop at the first quote, backslash or control
       character; the bytes before it only add their high bits (for the UTF-8 check below) */
    {
        const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
        while (e - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                        _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
            unsigned m = (unsigned)_mm_movemask_epi8(stop), hi = (unsigned)_mm_movemask_epi8(v);
            if (m) {
                unsigned k = (unsigned)__builtin_ctz(m);
                high |= hi & ((1u << k) - 1u);
                p += k;
                goto tail;
            }
            high |= hi;
            p += 16;
        }
    }
#endif
    /* 8 bytes at a time until a quote, a backslash or a control character shows up */
    while (e - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
        uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v);
        if (hit & highs) break;
        high |= v & highs;
        p += 8;
    }
#if defined(__SSE2__)
tail:
#endif
    while (p < e) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) FAIL;
        high |= c & 0x80;
        if (c == '\\') {
            escaped = 1;
            if (p + 1 >= e) FAIL;
            p += 2;
            continue;
        }
        p++;
    }
    if (p >= e) FAIL;
    if (high && !valid_utf8((const unsigned char *)s, (const unsigned char *)p)) FAIL;
    x->p = p + 1;
    if (!escaped) {
        *out = s;
        *len = p - s;
        return 0;
    }
    /* decode escapes: the output is never longer than the input, and only what intern keeps (max_len
       bytes, + 4 to find the character boundary there) is written; the rest is only checked */
    size_t room = (size_t)(p - s);
    int limited = x->st->max_len < PY_SSIZE_T_MAX - 8 && room > (size_t)x->st->max_len + 8;
    if (limited) room = (size_t)x->st->max_len + 8;
    char *d = arena_alloc(x->st, room);
    if (!d) {
        x->oom = 1;
        FAIL;
    }
    char *o = d;
    char *const o_end = limited ? d + room - 4 : NULL;  /* a 4-byte sequence still fits after it */
    const char *q = s;
    while (q < p) {
        if (o_end && o >= o_end) o = o_end; /* past what is kept: the spare bytes are overwritten */
        if (*q != '\\') {
            *o++ = *q++;
            continue;
        }
        q++;
        switch (*q) {
            case '"': *o++ = '"'; q++; break;
            case '\\': *o++ = '\\'; q++; break;
            case '/': *o++ = '/'; q++; break;
            case 'b': *o++ = '\b'; q++; break;
            case 'f': *o++ = '\f'; q++; break;
            case 'n': *o++ = '\n'; q++; break;
            case 'r': *o++ = '\r'; q++; break;
            case 't': *o++ = '\t'; q++; break;
            case 'u': {
                if (p - q < 5) FAIL;
                uint32_t cp = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hexval((unsigned char)q[i]);
                    if (h < 0) FAIL;
                    cp = cp * 16 + (uint32_t)h;
                }
                q += 5;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (p - q < 6 || q[0] != '\\' || q[1] != 'u') FAIL;
                    uint32_t lo = 0;
                    for (int i = 2; i <= 5; i++) {
                        int h = hexval((unsigned char)q[i]);
                        if (h < 0) FAIL;
                        lo = lo * 16 + (uint32_t)h;
                    }
                    if (lo < 0xDC00 || lo > 0xDFFF) FAIL;
                    q += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    FAIL;
                }
                if (cp < 0x80) {
                    *o++ = (char)cp;
                } else if (cp < 0x800) {
                    *o++ = (char)(0xC0 | (cp >> 6));
                    *o++ = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    *o++ = (char)(0xE0 | (cp >> 12));
                    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (char)(0x80 | (cp & 0x3F));
                } else {
                    *o++ = (char)(0xF0 | (cp >> 18));
                    *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (char)(0x80 | (cp & 0x3F));
                }
                break;
            }
            default: FAIL;
        }
    }
    *out = d;
    *len = o - d;
    return 0;
}

static int intern_string(P *x, int32_t *id) {
    const char *s;
    Py_ssize_t n;
    if (parse_string(x, &s, &n)) FAIL;
    int32_t v = intern(x->st, s, n);
    if (v < 0) {
        x->oom = 1;
        FAIL;
    }
    *id = v;
    return 0;
}

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number at x->p (strict grammar). is_int: no fraction or exponent; then *iv holds it
   (ok_int = 0 when it does not fit int64). *dv always holds the correctly rounded double. */
static int parse_number(P *x, int *is_int, int64_t *iv, int *ok_int, double *dv) {
    const char *p = x->p, *e = x->end, *start = p;
    int neg = 0;
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= e) FAIL;
    uint64_t mant = 0;
    int digits = 0, overflow = 0, frac_digits = 0;
    if (*p == '0') {
        p++;
        digits = 1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9') {
            if (mant > (UINT64_MAX - 9) / 10) overflow = 1;
            else mant = mant * 10 + (uint64_t)(*p - '0');
            digits++;
            p++;
        }
    } else {
        FAIL;
    }
    int integer = 1;
    if (p < e && *p == '.') {
        integer = 0;
        p++;
        const char *f = p;
        while (p < e && *p >= '0' && *p <= '9') {
            if (mant > (UINT64_MAX - 9) / 10) overflow = 1;
            else {
                mant = mant * 10 + (uint64_t)(*p - '0');
                frac_digits++;
            }
            p++;
        }
        if (p == f) FAIL;
    }
    int exp10 = 0, has_exp = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        integer = 0;
        has_exp = 1;
        p++;
        int eneg = 0;
        if (p < e && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        const char *f = p;
        while (p < e && *p >= '0' && *p <= '9') {
            if (exp10 < 100000) exp10 = exp10 * 10 + (*p - '0');
            p++;
        }
        if (p == f) FAIL;
        if (eneg) exp10 = -exp10;
    }
    (void)has_exp;
    (void)digits;
    x->p = p;
    *is_int = integer;
    *ok_int = 0;
    if (integer && !overflow) {
        if (!neg && mant <= (uint64_t)INT64_MAX) {
            *iv = (int64_t)mant;
            *ok_int = 1;
        } else if (neg && mant <= (uint64_t)INT64_MAX + 1) {
            *iv = (mant == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)mant;
            *ok_int = 1;
        }
    }
    int e10 = exp10 - frac_digits;
    if (!overflow && mant <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)mant;
        d = e10 < 0 ? d / POW10[-e10] : d * POW10[e10];
        *dv = neg ? -d : d;
        return 0;
    }
    /* rare: many digits or a big exponent -- Python's own correctly rounded parser */
    char small[64];
    size_t n = (size_t)(p - start);
    char *buf = n < sizeof(small) ? small : malloc(n + 1);
    if (!buf) {
        x->oom = 1;
        FAIL;
    }
    memcpy(buf, start, n);
    buf[n] = 0;
    if (x->saved) PyEval_RestoreThread(x->saved);
    double d = PyOS_string_to_double(buf, NULL, NULL);
    int err = d == -1.0 && PyErr_Occurred();
    if (err) PyErr_Clear();
    if (x->saved) x->saved = PyEval_SaveThread();
    if (buf != small) free(buf);
    if (err || isinf(d)) FAIL; /* out of range: msgspec refuses it too */
    *dv = d;
    return 0;
}

static int skip_value(P *x, int depth);

static inline int skip_digits(P *x) {
    const char *p = x->p, *e = x->end, *f = p;
    while (p < e && *p >= '0' && *p <= '9') p++;
    x->p = p;
    return p > f;
}

/* the JSON number grammar, nothing converted (values that are skipped) */
static int skip_number(P *x) {
    if (peek(x) == '-') x->p++;
    int c = peek(x);
    if (c == '0') x->p++;
    else if (!(c >= '1' && c <= '9') || !skip_digits(x)) FAIL;
    if (peek(x) == '.') {
        x->p++;
        if (!skip_digits(x)) FAIL;
    }
    c = peek(x);
    if (c == 'e' || c == 'E') {
        x->p++;
        c = peek(x);
        if (c == '+' || c == '-') x->p++;
        if (!skip_digits(x)) FAIL;
    }
    return 0;
}

static int skip_literal(P *x, const char *lit, size_t n) {
    if ((size_t)(x->end - x->p) < n || memcmp(x->p, lit, n) != 0) FAIL;
    x->p += n;
    return 0;
}

/* JSON objects, member by member. object_open: at '{'; 1 = empty object (consumed), 0 = members
   follow, -1 = not an object. object_key: the next member's key and its ':' (plain_only: a key with
   escapes fails - msgspec would decode it first, so the scanner leaves such events to it).
   object_next: after a value; 1 = another member follows, 0 = the object ended, -1 = invalid. */
static int object_open(P *x) {
    if (peek(x) != '{') return -1;
    x->p++;
    ws(x);
    if (peek(x) == '}') {
        x->p++;
        return 1;
    }
    return 0;
}

static int object_key(P *x, const char **k, Py_ssize_t *kn, int plain_only) {
    ws(x);
    if (peek(x) != '"') FAIL;
    const char *raw = x->p + 1;
    if (parse_string(x, k, kn)) FAIL;
    if (plain_only && *k != raw) FAIL;
    ws(x);
    if (peek(x) != ':') FAIL;
    x->p++;
    ws(x);
    return 0;
}

static int object_next(P *x) {
    ws(x);
    int c = peek(x);
    x->p++;
    return c == ',' ? 1 : c == '}' ? 0 : -1;
}

static int skip_value(P *x, int depth) {
    if (depth > MAX_DEPTH) FAIL;
    ws(x);
    int c = peek(x);
    const char *s;
    Py_ssize_t n;
    switch (c) {
        case '"': return parse_string(x, &s, &n);
        case '{': {
            int more = object_open(x) == 0;
            while (more) {
                if (object_key(x, &s, &n, 0) || skip_value(x, depth + 1)) FAIL;
                if ((more = object_next(x)) < 0) FAIL;
            }
            return 0;
        }
        case '[':
            x->p++;
            ws(x);
            if (peek(x) == ']') {
                x->p++;
                return 0;
            }
            for (;;) {
                if (skip_value(x, depth + 1)) FAIL;
                ws(x);
                c = peek(x);
                x->p++;
                if (c == ',') continue;
                if (c == ']') return 0;
                FAIL;
            }
        case 't': return skip_literal(x, "true", 4);
        case 'f': return skip_literal(x, "false", 5);
        case 'n': return skip_literal(x, "null", 4);
        default: {
            if (c == '-' || (c >= '0' && c <= '9')) return skip_number(x);
            FAIL;
        }
    }
}

static inline int is_null(P *x) {
    if (x->end - x->p >= 4 && memcmp(x->p, "null", 4) == 0) {
        x->p += 4;
        return 1;
    }
    return 0;
}

/* int | None (msgspec: bools and floats are errors) */
/* The number shapes Kineto writes, without the general parser: [-]digits[.digits], at most 18 digits
   in all, no exponent, no leading zero, followed by a byte that cannot continue a number. Returns 1
   with x->p advanced (*frac = -1 without a fraction), 0 when parse_number must decide (nothing
   consumed). The values are those parse_number gives: the same mantissa and the same one division. */
static inline int fast_number(P *x, uint64_t *mant, int *neg, int *frac) {
    const char *p = x->p, *e = x->end;
    if (e - p < 24) return 0; /* near the end: the general parser checks every bound */
    int ng = *p == '-';
    p += ng;
    const char *d = p, *lim = p + 19; /* every read below stays within x->p + 22 */
    uint64_t v = 0;
    while (p < lim && (unsigned)(*p - '0') < 10u) v = v * 10 + (uint64_t)(*p++ - '0');
    int n = (int)(p - d), f = -1;
    if (n == 0 || n > 18 || (n > 1 && *d == '0')) return 0;
    if (*p == '.') {
        const char *q = ++p;
        lim = q + (19 - n);
        while (p < lim && (unsigned)(*p - '0') < 10u) v = v * 10 + (uint64_t)(*p++ - '0');
        f = (int)(p - q);
        if (f == 0) return 0;
        n += f;
    }
    if (n > 18 || (unsigned)(*p - '0') < 10u || *p == '.' || *p == 'e' || *p == 'E') return 0;
    x->p = p;
    *mant = v;
    *neg = ng;
    *frac = f;
    return 1;
}

static int parse_int_or_null(P *x, int64_t missing, int64_t *out) {
    if (is_null(x)) {
        *out = missing;
        return 0;
    }
    int c = peek(x);
    if (!(c == '-' || (c >= '0' && c <= '9'))) FAIL;
    uint64_t m;
    int neg, frac;
    const char *start = x->p;
    if (fast_number(x, &m, &neg, &frac)) {
        if (frac < 0) {
            *out = neg ? -(int64_t)m : (int64_t)m;
            return 0;
        }
        x->p = start;
    }
    int is_int, ok;
    int64_t iv;
    double dv;
    if (parse_number(x, &is_int, &iv, &ok, &dv) || !is_int || !ok) FAIL;
    *out = iv;
    return 0;
}

/* float (ints allowed); with_null: float | None -> NaN */
static int parse_float(P *x, int with_null, double *out) {
    if (with_null && is_null(x)) {
        *out = NAN;
        return 0;
    }
    int c = peek(x);
    if (!(c == '-' || (c >= '0' && c <= '9'))) FAIL;
    uint64_t m;
    int neg, frac;
    const char *start = x->p;
    if (fast_number(x, &m, &neg, &frac)) {
        if (m <= ((uint64_t)1 << 53)) { /* exact in a double: parse_number's own fast case */
            double d = (double)m;
            if (frac > 0) d = d / POW10[frac];
            *out = neg ? -d : d;
            return 0;
        }
        x->p = start;
    }
    int is_int, ok;
    int64_t iv;
    return parse_number(x, &is_int, &iv, &ok, out);
}

static const uint64_t POW10U[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
    100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
    100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
    1000000000000000000ULL, 10000000000000000000ULL};

/* A JSON number of µs at x->p (strict grammar) -> int64 ns, exactly: its decimal digits with the point moved
   three places right, rounded half to even past the ns digit, so an epoch-µs ts (1733600000123456.789, 19
   digits: a double holds it to 0.25 µs) keeps its ns. |ns| >= 2^62 gives NS_HIGH / NS_LOW (any magnitude:
   1e400 too; sanitize drops such times). core/trace/timens.py reads every number the same way. */
static int parse_ns(P *x, int64_t *out) {
    const char *p = x->p, *e = x->end;
    int neg = 0;
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= e) FAIL;
    /* Kineto's shapes first: <= 16 integer digits, '.', <= 3 fraction digits, no exponent */
    if (e - p >= 24 && (unsigned)(*p - '0') < 10u) {
        const char *q = p, *lim = p + 16;
        uint64_t v = 0;
        if (*q == '0') q++; /* 0.057: no leading zeros otherwise (01 is not JSON: the general path fails it) */
        else while (q < lim && (unsigned)(*q - '0') < 10u) v = v * 10 + (uint64_t)(*q++ - '0');
        int f = 0;
        if (*q == '.' && (unsigned)(q[1] - '0') < 10u) {
            q++;
            while (f < 3 && (unsigned)(*q - '0') < 10u) {
                v = v * 10 + (uint64_t)(*q++ - '0');
                f++;
            }
        }
        if ((unsigned)(*q - '0') >= 10u && *q != '.' && *q != 'e' && *q != 'E') {
            v *= POW10U[3 - f]; /* < 10^19 < 2^64 */
            x->p = q;
            if (v >= NS_LIMIT) *out = neg ? NS_LOW : NS_HIGH;
            else *out = neg ? -(int64_t)v : (int64_t)v;
            return 0;
        }
    }
    const char *ip = p;
    if (*p == '0') p++;
    else if ((unsigned)(*p - '1') < 9u) {
        while (p < e && (unsigned)(*p - '0') < 10u) p++;
    } else {
        FAIL;
    }
    const char *ie = p, *fp = p, *fe = p;
    if (p < e && *p == '.') {
        fp = ++p;
        while (p < e && (unsigned)(*p - '0') < 10u) p++;
        if (p == fp) FAIL;
        fe = p;
    }
    long long exp10 = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < e && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        const char *f = p;
        while (p < e && (unsigned)(*p - '0') < 10u) {
            if (exp10 < 1000000000000000LL) exp10 = exp10 * 10 + (*p - '0'); /* past 10^15: beyond any digits */
            p++;
        }
        if (p == f) FAIL;
        if (eneg) exp10 = -exp10;
    }
    x->p = p;
    /* digits d_0 .. d_{n-1} (integer then fraction digits); the ns value is the first `point` of them */
    long long ni = (long long)(ie - ip), n = ni + (long long)(fe - fp), point = ni + exp10 + 3;
#define DIGIT(k) ((k) < ni ? ip[(k)] - '0' : fp[(k) - ni] - '0')
    uint64_t v = 0;
    int over = 0;
    long long k = 0, whole = point < n ? point : n;
    for (; k < whole; k++) {
        int d = DIGIT(k);
        if (!over) {
            if (v > NS_LIMIT / 10) over = 1; /* v * 10 >= 2^62 (and no wrap-around of v * 10) */
            else if ((v = v * 10 + (uint64_t)d) >= NS_LIMIT) over = 1;
        }
    }
    if (!over && point > n && v) { /* zeros to append */
        long long z = point - n;
        if (z > 19 || v > (NS_LIMIT - 1) / POW10U[z]) over = 1;
        else v *= POW10U[z];
    }
    if (!over && point >= 0 && point < n) { /* the rest rounds: half to even */
        int r = DIGIT(point), sticky = 0;
        for (k = point + 1; k < n && !sticky; k++) sticky = DIGIT(k) != 0;
        if (r > 5 || (r == 5 && (sticky || (v & 1)))) v++;
        if (v >= NS_LIMIT) over = 1;
    }
#undef DIGIT
    if (over) *out = neg ? NS_LOW : NS_HIGH;
    else *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* int | str [| None]: ints in the code range stay ints, strings (and ints outside it, as their
   decimal text) become STR_CODE_BASE - string id (core.trace.columns._Strings.codes) */
static int parse_code(P *x, int allow_null, int64_t *out) {
    int c = peek(x);
    if (c == '"') {
        int32_t id;
        if (intern_string(x, &id)) FAIL;
        *out = STR_CODE_BASE - id;
        return 0;
    }
    if (allow_null && is_null(x)) {
        *out = NONE_I;
        return 0;
    }
    if (!(c == '-' || (c >= '0' && c <= '9'))) FAIL;
    const char *start = x->p;
    uint64_t m;
    int neg, frac;
    if (fast_number(x, &m, &neg, &frac)) {
        int64_t v = neg ? -(int64_t)m : (int64_t)m;
        if (frac < 0 && v > CODE_MIN && v < CODE_MAX) {
            *out = v;
            return 0;
        }
        x->p = start;
    }
    int is_int, ok;
    int64_t iv;
    double dv;
    if (parse_number(x, &is_int, &iv, &ok, &dv) || !is_int) FAIL;
    if (ok && iv > CODE_MIN && iv < CODE_MAX) {
        *out = iv;
        return 0;
    }
    if (start[0] == '-' && x->p - start == 2 && start[1] == '0') FAIL; /* "-0" is in range anyway */
    int32_t id = intern(x->st, start, x->p - start);
    if (id < 0) {
        x->oom = 1;
        FAIL;
    }
    *out = STR_CODE_BASE - id;
    return 0;
}

/* Member keys we read, matched straight in the buffer: the key's text and its closing quote compared
   with the literal (so only a plain key - no escapes - matches, as plain_only requires), candidates
   bucketed by first byte. A key that matches none is parsed as a string and its value skipped. */
enum { K_INT, K_RAW, K_CSTACK, K_OCC, K_STR_CHECK, K_INT_CHECK, K_SKIP,
       K_PH, K_TS, K_DUR, K_NAME, K_CAT, K_PID, K_TID, K_ID, K_ARGS };
typedef struct {
    const char *key;
    Py_ssize_t len;
    int kind, idx;
    uint64_t w0, m0;  /* the first min(len + 1, 8) bytes of key + '"', and their mask */
} ArgKey;
typedef struct {
    ArgKey keys[MAX_KEYS];
    int n;
    uint8_t start[256], count[256];
} KeyTab;
static KeyTab ARG_TAB, TOP_TAB;

static void tab_add(KeyTab *t, const char *key, int kind, int idx) {
    ArgKey k = {key, (Py_ssize_t)strlen(key), kind, idx, 0, 0};
    char quoted[MAX_KEY_LEN + 2] = {0};
    memcpy(quoted, key, (size_t)k.len);
    quoted[k.len] = '"';
    size_t n = (size_t)k.len + 1 < 8 ? (size_t)k.len + 1 : 8;
    memcpy(&k.w0, quoted, n);
    k.m0 = n == 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * n)) - 1);
    t->keys[t->n++] = k;
}

static int cmp_first(const void *a, const void *b) {
    return (int)(unsigned char)((const ArgKey *)a)->key[0] - (int)(unsigned char)((const ArgKey *)b)->key[0];
}

static void tab_index(KeyTab *t) {
    qsort(t->keys, (size_t)t->n, sizeof(ArgKey), cmp_first);
    for (int i = t->n - 1; i >= 0; i--) {
        unsigned char c = (unsigned char)t->keys[i].key[0];
        t->start[c] = (uint8_t)i;
        t->count[c]++;
    }
}

static void init_arg_keys(void) {
    for (int a = 0; a < N_INT_ARGS; a++) tab_add(&ARG_TAB, INT_KEYS[a], K_INT, a);
    for (int a = 0; a < N_RAW_ARGS; a++) tab_add(&ARG_TAB, RAW_KEYS[a], K_RAW, a);
    tab_add(&ARG_TAB, "Call stack", K_CSTACK, 0);
    tab_add(&ARG_TAB, "est. achieved occupancy %", K_OCC, 0);
    tab_add(&ARG_TAB, "name", K_STR_CHECK, 0);
    tab_add(&ARG_TAB, "labels", K_STR_CHECK, 0);
    tab_add(&ARG_TAB, "sort_index", K_INT_CHECK, 0);
    /* frequent keys whose values nothing reads: skipped without parsing the key as a string */
    tab_add(&ARG_TAB, "Ev Idx", K_SKIP, 0);
    tab_add(&ARG_TAB, "Record function id", K_SKIP, 0);
    tab_add(&ARG_TAB, "Concrete Inputs", K_SKIP, 0);
    tab_add(&ARG_TAB, "Fwd thread id", K_SKIP, 0);
    tab_index(&ARG_TAB);
    static const char *top[] = {"ph", "ts", "dur", "name", "cat", "pid", "tid", "id", "args"};
    for (int k = 0; k < 9; k++) tab_add(&TOP_TAB, top[k], K_PH + k, 0);
    tab_index(&TOP_TAB);
}

/* The member key at x->p (after whitespace) and its ':' with the whitespace around it. Returns the
   key's entry in `t`, or &UNKNOWN for any other plain key (its value is then skipped); fails on a key
   with escapes (msgspec would decode it first: the scanner leaves such events to it) or bad syntax. */
static const ArgKey UNKNOWN = {"", 0, K_SKIP, 0};

static inline int key_is(const char *p, uint64_t w, const ArgKey *k) {
    return (w & k->m0) == k->w0 &&
           (k->len < 8 || (p[k->len + 1] == '"' && memcmp(p + 9, k->key + 8, (size_t)k->len - 8) == 0));
}

/* Keys come in the writer's order (Kineto: ph, cat, name, pid, tid, ts, dur, args; the args of one
   kind of event alike), so each table remembers, per key, the key that followed it last time
   (`succ`, entry index + 1; slot AFTER_START: the first key of an object, AFTER_UNKNOWN: after an
   unknown key) and tries that one first: one compare instead of a search of the first byte's bucket. */
enum { AFTER_START = MAX_KEYS, AFTER_UNKNOWN = MAX_KEYS + 1, N_SUCC = MAX_KEYS + 2 };

static inline __attribute__((always_inline)) const ArgKey *member_key(P *x, const KeyTab *t, uint8_t *succ, int *last) {
    ws(x);
    const char *p = x->p, *e = x->end;
    if (p >= e || *p != '"') return NULL;
    const ArgKey *found = NULL;
    if (e - p > 8 + MAX_KEY_LEN) { /* 8-byte compares; the rest of a long key by memcmp */
        uint64_t w;
        memcpy(&w, p + 1, 8);
        int g = succ[*last];
        if (g && key_is(p, w, &t->keys[g - 1])) {
            found = &t->keys[g - 1];
        } else {
            unsigned char c = (unsigned char)p[1];
            for (int j = t->start[c], m = t->count[c]; m > 0; j++, m--) {
                if (key_is(p, w, &t->keys[j])) {
                    found = &t->keys[j];
                    break;
                }
            }
        }
    } else if (e - p > 2) {
        unsigned char c = (unsigned char)p[1];
        for (int j = t->start[c], m = t->count[c]; m > 0; j++, m--) {
            const ArgKey *k = &t->keys[j];
            if (e - p > k->len + 1 && p[k->len + 1] == '"' && memcmp(p + 1, k->key, (size_t)k->len) == 0) {
                found = k;
                break;
            }
        }
    }
    if (found) {
        int idx = (int)(found - t->keys);
        succ[*last] = (uint8_t)(idx + 1);
        *last = idx;
        x->p = p + found->len + 2;
    } else {
        const char *k;
        Py_ssize_t kn;
        if (parse_string(x, &k, &kn) || k != p + 1) return NULL;
        found = &UNKNOWN;
        *last = AFTER_UNKNOWN;
    }
    const char *q = x->p;
    if (e - q > 2 && q[0] == ':' && q[1] == ' ' && (unsigned char)q[2] > ' ') { /* Kineto's `": v` */
        x->p = q + 2;
        return found;
    }
    if (q < e && *q == ':') x->p++;
    else {
        ws(x);
        if (peek(x) != ':') return NULL;
        x->p++;
    }
    ws(x);
    return found;
}

static int parse_args(P *x, Cols *c, Py_ssize_t i) {
    int more = object_open(x);
    if (more < 0) FAIL;
    more = !more;
    int last = AFTER_START;
    while (more) {
        const ArgKey *t = member_key(x, &ARG_TAB, x->succ_arg, &last);
        if (t == NULL) FAIL;
        if (t->kind == K_SKIP) {
            if (skip_value(x, 1)) FAIL;
        } else if (t->kind == K_INT) {
            if (parse_int_or_null(x, INT_DEFAULT[t->idx], &c->ints[t->idx][i])) FAIL;
        } else if (t->kind == K_RAW) {
            const char *s = x->p;
            if (skip_value(x, 1)) FAIL;
            int32_t id = intern(x->st, s, x->p - s);
            if (id < 0) {
                x->oom = 1;
                FAIL;
            }
            c->raws[t->idx][i] = id;
        } else if (t->kind == K_CSTACK) {
            if (is_null(x)) c->cstack[i] = 0;
            else if (peek(x) != '"' || intern_string(x, &c->cstack[i])) FAIL;
        } else if (t->kind == K_OCC) {
            if (parse_float(x, 1, &c->occ[i])) FAIL;
        } else if (t->kind == K_STR_CHECK) {
            /* str | None, read by Python for metadata events: only type-checked here */
            if (!is_null(x)) {
                const char *s;
                Py_ssize_t n;
                if (peek(x) != '"' || parse_string(x, &s, &n)) FAIL;
            }
        } else { /* K_INT_CHECK */
            int64_t v;
            if (parse_int_or_null(x, 0, &v)) FAIL;
        }
        if ((more = object_next(x)) < 0) FAIL;
    }
    return 0;
}

static int8_t ph_code(const char *s, Py_ssize_t n) {
    if (n != 1) return PH_OTHER;
    switch (s[0]) {
        case 'X': return PH_X;
        case 'B': return PH_B;
        case 'E': return PH_E;
        case 'i': case 'I': case 'R': case 'n': return PH_INSTANT;
        case 's': return PH_FLOW_S;
        case 'f': return PH_FLOW_F;
        case 't': return PH_FLOW_T;
        case 'M': return PH_META;
        case 'C': return PH_COUNTER;
        default: return PH_OTHER;
    }
}

/* One event, parsed into the next slot of `c` (the rows: X/B/E events with a ts, nearly all of them);
   any other event (instants, flows, counters, metadata, events without a ts) is then moved to `o`. */
static int parse_event(P *x, Cols *c, Cols *o) {
    Py_ssize_t i = c->n;
    if (cols_reserve(c, i + 1)) {
        x->oom = 1;
        FAIL;
    }
    if (i >= c->filled) {
        c->filled = i + DEFAULTS_AHEAD < c->cap ? i + DEFAULTS_AHEAD : c->cap;
        cols_defaults(c, i, c->filled);
    }
    const char *start = x->p;
    c->off[i] = start - x->base;

    int more = !object_open(x); /* the caller saw the '{' */
    int last = AFTER_START, had_args = 0;
    while (more) {
        const ArgKey *t = member_key(x, &TOP_TAB, x->succ_top, &last);
        if (t == NULL) FAIL;
        switch (t->kind) {
            case K_PH: {
                const char *s;
                Py_ssize_t n;
                if (peek(x) != '"' || parse_string(x, &s, &n)) FAIL;
                c->ph[i] = ph_code(s, n);
                break;
            }
            case K_TS:
                if (parse_ns(x, &c->ts[i])) FAIL;
                break;
            case K_DUR:
                if (parse_ns(x, &c->dur[i])) FAIL;
                break;
            case K_NAME:
                if (peek(x) != '"' || intern_string(x, &c->name[i])) FAIL;
                break;
            case K_CAT:
                if (peek(x) != '"' || intern_string(x, &c->cat[i])) FAIL;
                break;
            case K_PID:
                if (parse_code(x, 0, &c->pid[i])) FAIL;
                break;
            case K_TID:
                if (parse_code(x, 0, &c->tid[i])) FAIL;
                break;
            case K_ID:
                if (parse_code(x, 1, &c->id[i])) FAIL;
                break;
            case K_ARGS:
                if (had_args) { /* a later "args" replaces an earlier one entirely */
                    c->occ[i] = NAN;
                    c->cstack[i] = 0;
                    for (int a = 0; a < N_INT_ARGS; a++) c->ints[a][i] = INT_DEFAULT[a];
                    for (int a = 0; a < N_RAW_ARGS; a++) c->raws[a][i] = 0;
                }
                had_args = 1;
                if (parse_args(x, c, i)) FAIL;
                break;
            default:
                if (skip_value(x, 1)) FAIL;
        }
        if ((more = object_next(x)) < 0) FAIL;
    }
    if (c->ph[i] <= PH_E && c->ts[i] != NS_MISSING) {
        c->n = i + 1;
        return 0;
    }
    Py_ssize_t j = o->n;
    if (cols_reserve(o, j + 1)) {
        x->oom = 1;
        FAIL;
    }
    cols_move(c, i, o, j);
    cols_defaults(c, i, i + 1); /* the slot is the next event's */
    o->n = j + 1;
    if (o->ph[j] == PH_META || o->ph[j] == PH_COUNTER) {
        if (o->nspan == o->spancap) {
            Py_ssize_t cap = o->spancap ? o->spancap * 2 : 256;
            int64_t *s = realloc(o->span, sizeof(int64_t) * 3 * (size_t)cap);
            if (!s) {
                x->oom = 1;
                FAIL;
            }
            o->span = s;
            o->spancap = cap;
        }
        o->span[3 * o->nspan] = j;
        o->span[3 * o->nspan + 1] = start - x->base;
        o->span[3 * o->nspan + 2] = x->p - x->base;
        o->nspan++;
    }
    return 0;
}

static int parse_all(P *x, Cols *c, Cols *o) {
    ws(x);
    int wrapped = 0;
    if (peek(x) == '[') {
        wrapped = 1;
        x->p++;
        ws(x);
        if (peek(x) == ']') {
            x->p++;
            ws(x);
            return x->p == x->end ? 0 : -1;
        }
    }
    if (x->p >= x->end) return wrapped ? -1 : 0;
    for (;;) {
        ws(x);
        if (peek(x) != '{') FAIL;
        if (parse_event(x, c, o)) FAIL;
        ws(x);
        int ch = peek(x);
        if (ch == ',') {
            x->p++;
            continue;
        }
        if (ch == ']' && wrapped) {
            x->p++;
            ws(x);
            return x->p == x->end ? 0 : -1;
        }
        if (ch == -1 && !wrapped) return 0;
        FAIL;
    }
}

/* --- Python interface ------------------------------------------------------------------------ */
/* A column handed to Python without a copy: owns the malloc'd block, exposes it read-only through
   the buffer protocol (np.frombuffer keeps the object alive). */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t len;
} Column;

static void column_dealloc(Column *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int column_getbuffer(Column *self, Py_buffer *view, int flags) {
    static char empty[1];
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : empty, self->len, 1, flags);
}

static PyBufferProcs column_as_buffer = {(getbufferproc)column_getbuffer, NULL};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core.trace._scan.Column",
    .tp_basicsize = sizeof(Column),
    .tp_dealloc = (destructor)column_dealloc,
    .tp_as_buffer = &column_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a column of scanned values (buffer protocol)",
};

/* takes ownership of *pp (set to NULL so that cols_free leaves it alone) */
static PyObject *col_bytes(void *pp, Py_ssize_t n) {
    void **ptr = (void **)pp;
    Column *c = PyObject_New(Column, &ColumnType);
    if (!c) return NULL;
    c->data = *ptr;
    c->len = n;
    *ptr = NULL;
    return (PyObject *)c;
}

static int put(PyObject *d, const char *k, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

static PyObject *cols_dict(Cols *c) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    Py_ssize_t n = c->n;
    if (put(d, "ph", col_bytes(&c->ph, n))) goto fail;
    if (put(d, "ts", col_bytes(&c->ts, n * 8))) goto fail;
    if (put(d, "dur", col_bytes(&c->dur, n * 8))) goto fail;
    if (put(d, "occupancy", col_bytes(&c->occ, n * 8))) goto fail;
    if (put(d, "name", col_bytes(&c->name, n * 4))) goto fail;
    if (put(d, "cat", col_bytes(&c->cat, n * 4))) goto fail;
    if (put(d, "call_stack", col_bytes(&c->cstack, n * 4))) goto fail;
    if (put(d, "pid", col_bytes(&c->pid, n * 8))) goto fail;
    if (put(d, "tid", col_bytes(&c->tid, n * 8))) goto fail;
    if (put(d, "id", col_bytes(&c->id, n * 8))) goto fail;
    if (put(d, "offset", col_bytes(&c->off, n * 8))) goto fail;
    for (int a = 0; a < N_INT_ARGS; a++)
        if (put(d, INT_NAMES[a], col_bytes(&c->ints[a], n * 8))) goto fail;
    for (int a = 0; a < N_RAW_ARGS; a++)
        if (put(d, RAW_NAMES[a], col_bytes(&c->raws[a], n * 4))) goto fail;
    if (put(d, "spans", col_bytes(&c->span, c->nspan * 3 * 8))) goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* {"strings", "n": events in the range, "rows": columns of the X/B/E events with a ts, "other": the
   same columns of every other event (whose "spans" index them)} */
static PyObject *build_result(Cols *c, Cols *o, Strings *st) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    PyObject *strs = PyList_New(st->n);
    if (!strs) goto fail;
    for (int32_t i = 0; i < st->n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(st->ptrs[i], st->lens[i], NULL);
        if (!s) { /* invalid UTF-8: the Python path decides (with "replace" where it applies) */
            Py_DECREF(strs);
            Py_DECREF(d);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(strs, i, s);
    }
    if (put(d, "strings", strs)) goto fail;
    if (put(d, "cut", PyLong_FromSsize_t(st->ncut))) goto fail;
    if (put(d, "n", PyLong_FromSsize_t(c->n + o->n))) goto fail;
    if (put(d, "rows", cols_dict(c))) goto fail;
    if (put(d, "other", cols_dict(o))) goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, stop, max_len = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "y*nn|n", &view, &start, &stop, &max_len)) return NULL;
    if (max_len < 1) max_len = 1;
    if (start < 0 || stop > view.len || start > stop) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan: range outside the buffer");
        return NULL;
    }
    Cols cols, other;
    memset(&cols, 0, sizeof(cols));
    memset(&other, 0, sizeof(other));
    Strings st;
    PyObject *result = NULL;
    if (strings_init(&st)) {
        strings_free(&st);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    st.max_len = max_len;
    if (cols_reserve(&cols, (stop - start) / 96 + 16) || cols_reserve(&other, 256)) { /* virtual: touched as used */
        cols_free(&cols);
        cols_free(&other);
        strings_free(&st);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    P x = {(const char *)view.buf + start, (const char *)view.buf + stop, (const char *)view.buf, &st, 0, NULL};
    /* no Python object is touched while parsing: other threads (parallel scans, the UI) run */
    x.saved = PyEval_SaveThread();
    int rc = parse_all(&x, &cols, &other);
    PyEval_RestoreThread(x.saved);
    if (x.oom) {
        PyErr_NoMemory();
    } else if (rc) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = build_result(&cols, &other, &st);
    }
    cols_free(&cols);
    cols_free(&other);
    strings_free(&st);
    PyBuffer_Release(&view);
    return result;
}

/* depth_merge(end, key, depth): depth[i] = i - #(end values <= key[i]) for sorted int64 `end` and
   non-decreasing int64 `key` (core/trace/build.py compute_depth), by one merge of the two sorted arrays
   (linear; numpy's searchsorted of 37M keys into 37M ends missed the cache on every probe). `depth` is
   int32 or int64, as long as `key`. Returns False, with depth unspecified, when key ever decreases. */
static PyObject *depth_merge(PyObject *self, PyObject *args) {
    Py_buffer e, k, d;
    if (!PyArg_ParseTuple(args, "y*y*w*", &e, &k, &d)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t m = e.len / 8, n = k.len / 8, isz = e.len % 8 || k.len % 8 ? 0 : (n ? d.len / n : 4);
    if ((isz != 4 && isz != 8) || d.len != n * isz) {
        PyErr_SetString(PyExc_ValueError, "depth_merge: end and key int64, depth int32/int64 of key's length");
        goto done;
    }
    {
        const int64_t *end = (const int64_t *)e.buf, *key = (const int64_t *)k.buf;
        int ok = 1;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t v = key[i];
            if (i && v < key[i - 1]) {
                ok = 0;
                break;
            }
            while (j < m && end[j] <= v) j++;
            if (isz == 4) ((int32_t *)d.buf)[i] = (int32_t)(i - j);
            else ((int64_t *)d.buf)[i] = (int64_t)(i - j);
        }
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(ok);
    }
done:
    PyBuffer_Release(&e);
    PyBuffer_Release(&k);
    PyBuffer_Release(&d);
    return result;
}

#include "../snapshot/_pickscan.h" /* pickle_bounds: the memory-snapshot pickle's opcode walk */
#include "../snapshot/_stackkeys.h" /* stack_groups: a snapshot's frames lists grouped by content */

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, start, end[, max_len]) -> {strings, cut, n, rows, other} column buffers (strings longer than "
     "max_len bytes cut to it: `cut` of them), or None when the range needs the Python path"},
    {"depth_merge", depth_merge, METH_VARARGS,
     "depth_merge(end, key, depth) -> bool: depth[i] = i - #(end <= key[i]), sorted end, non-decreasing key"},
    {"pickle_bounds", pickle_bounds, METH_VARARGS,
     "pickle_bounds(buf, max_objects, max_depth, max_stack, max_int_bytes, max_text_arg) -> None or the "
     "one-line reason a memory-snapshot pickle is refused (core/snapshot/_pickscan.h)"},
    {"stack_groups", stack_groups, METH_VARARGS,
     "stack_groups(frame_lists) -> (int64 group per row as a bytearray, -1: not a non-empty list; the first "
     "list of each group): lists grouped by the objects they hold (core/snapshot/_stackkeys.h)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan",
                                    "Kineto trace events -> columns (accelerator for core.trace.columns)",
                                    -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    init_arg_keys();
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    return PyModule_Create(&module);
}
