/*
 * schemas._flatdecode: Avro object container files of ctrlaudit.ControllerEvent v1 -> the flat
 * `events` columns of schemas/archive/flat.py, without building Python objects per record.
 *
 * The decoder is hand-specialised to controller_event.v1.avsc (the Python wrapper,
 * schemas/archive/fastflat.py, only calls it for files whose writer schema has exactly v1's canonical
 * form) and fills, per column, Arrow buffers (validity bitmap, values / offsets, child values)
 * that the wrapper assembles with pyarrow.Array.from_buffers. The column list and the mapping of
 * record fields to columns mirror schemas.archive.flat.flatten, which stays the reference.
 *
 * Safety: every read is bounds-checked; varints are at most 10 bytes; negative lengths/counts,
 * counts larger than the bytes left, enum and union indexes out of range, ints outside int32,
 * booleans other than 0/1, invalid UTF-8, bad sync markers, trailing bytes in a block and bad
 * deflate streams are errors (reported with the index of the record being decoded). Errors
 * unwind with longjmp to the block loop; all memory is owned by the batch/decoder structs.
 * Decoding runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef CTRLAUDIT_CHAIN
#include <openssl/sha.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#endif

/* ------------------------------------------------------------------------------------------ */
/* errors                                                                                      */

enum { E_NONE = 0, E_DATA = 1, E_NOMEM = 2, E_LIMIT = 3, E_CHAIN = 4 };

typedef struct {
    jmp_buf jb;
    int kind;
    char msg[256];
} err_t;

static void fail(err_t *e, int kind, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void fail(err_t *e, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->kind = kind;
    longjmp(e->jb, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* reader                                                                                      */

typedef struct {
    const uint8_t *p, *end;
    err_t *e;
    /* set by rd_record for the chain check: where the hash field is, and the chain fields */
    const uint8_t *h_start, *h_end, *prev_p, *hash_p;
    int32_t prev_n, hash_n;
    int64_t seq;
    int32_t line; /* the envelope's source line (-1: none), kept for a ClientRequest's rq_line */
    /* the writer schema's version bounds what the record may hold: v1 has 9 payload branches and 7 source
       kinds, v2 one more of each (ClientRequest, REQUEST_LOG, both appended) */
    int n_payload, n_source_kind;
} rd_t;

#define REMAIN(r) ((int64_t)((r)->end - (r)->p))

static uint64_t rd_varint_slow(rd_t *r)
{
    const uint8_t *p = r->p;
    uint64_t v = 0;
    int shift = 0;
    if (r->end - p >= 10) { /* fast path: no per-byte bound check */
        for (int i = 0; i < 10; i++) {
            uint8_t b = p[i];
            if (i == 9 && b > 1)
                fail(r->e, E_DATA, "varint longer than 10 bytes or above 64 bits");
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                r->p = p + i + 1;
                return v;
            }
            shift += 7;
        }
        fail(r->e, E_DATA, "varint longer than 10 bytes");
    }
    for (int i = 0; i < 10; i++) {
        if (p >= r->end)
            fail(r->e, E_DATA, "unexpected end of data (in a varint)");
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            fail(r->e, E_DATA, "varint longer than 10 bytes or above 64 bits");
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            r->p = p;
            return v;
        }
        shift += 7;
    }
    fail(r->e, E_DATA, "varint longer than 10 bytes");
}

#define HOT static inline __attribute__((always_inline))

HOT uint64_t rd_varint(rd_t *r)
{
    if (__builtin_expect(r->p < r->end && !(*r->p & 0x80), 1))
        return *r->p++;
    return rd_varint_slow(r);
}

HOT int64_t rd_long(rd_t *r)
{
    uint64_t u = rd_varint(r);
    return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

HOT int32_t rd_int(rd_t *r)
{
    int64_t v = rd_long(r);
    if (v < INT32_MIN || v > INT32_MAX)
        fail(r->e, E_DATA, "int value %lld out of the 32-bit range", (long long)v);
    return (int32_t)v;
}

static inline int rd_bool(rd_t *r)
{
    if (r->p >= r->end)
        fail(r->e, E_DATA, "unexpected end of data (in a boolean)");
    uint8_t b = *r->p++;
    if (b > 1)
        fail(r->e, E_DATA, "boolean byte %u is neither 0 nor 1", b);
    return b;
}

HOT int rd_index(rd_t *r, int n, const char *what)
{
    int64_t v = rd_long(r);
    if (v < 0 || v >= n)
        fail(r->e, E_DATA, "%s index %lld out of range (0..%d)", what, (long long)v, n - 1);
    return (int)v;
}

/* The second byte of a multi-byte sequence after the lead byte c: 0x80..0xBF, narrower after E0 (no overlong),
 * ED (no surrogate), F0 (no overlong) and F4 (nothing beyond U+10FFFF), as Unicode's table of well-formed
 * byte sequences gives them. */
static inline int utf8_second_ok(uint8_t c, uint8_t c1)
{
    uint8_t lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    return c1 >= lo && c1 <= hi;
}

/* Strict UTF-8 (as Python's bytes.decode('utf-8')): no overlongs, surrogates or > U+10FFFF. */
static int utf8_valid(const uint8_t *s, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c < 0xC2 || c > 0xF4 || i + len > n || !utf8_second_ok(c, s[i + 1]))
            return 0;
        for (int k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

typedef struct {
    const uint8_t *p;
    int32_t n;
} sv_t;

static inline sv_t rd_bytes(rd_t *r)
{
    int64_t n = rd_long(r);
    if (n < 0)
        fail(r->e, E_DATA, "negative length %lld", (long long)n);
    if (n > REMAIN(r))
        fail(r->e, E_DATA, "length %lld larger than the %lld bytes left", (long long)n, (long long)REMAIN(r));
    if (n > INT32_MAX)
        fail(r->e, E_LIMIT, "string of %lld bytes", (long long)n);
    sv_t s = {r->p, (int32_t)n};
    r->p += n;
    return s;
}

static inline sv_t rd_str(rd_t *r)
{
    sv_t s = rd_bytes(r);
    if (!utf8_valid(s.p, s.n))
        fail(r->e, E_DATA, "string is not valid UTF-8");
    return s;
}

/* Array/map block count: the number of items of the next block (0 = end). */
static inline int64_t rd_block_count(rd_t *r)
{
    int64_t cnt = rd_long(r);
    if (cnt < 0) {
        if (cnt == INT64_MIN)
            fail(r->e, E_DATA, "array block count out of range");
        cnt = -cnt;
        int64_t size = rd_long(r);
        if (size < 0 || size > REMAIN(r))
            fail(r->e, E_DATA, "array block size %lld invalid", (long long)size);
    }
    if (cnt > REMAIN(r)) /* every item takes at least one byte */
        fail(r->e, E_DATA, "array count %lld larger than the %lld bytes left", (long long)cnt, (long long)REMAIN(r));
    return cnt;
}

/* ------------------------------------------------------------------------------------------ */
/* columns                                                                                     */

enum { K_I32 = 0, K_I64 = 1, K_BOOL = 2, K_STR = 3, K_LI32 = 4, K_LI64 = 5, K_LSTR = 6 };

enum {
    C_SEQ, C_EVENT_ID, C_CLUSTER_ID, C_KIND, C_SOURCE_KIND, C_SOURCE_OFFSET, C_SOURCE_INDEX, C_SOURCE_NODE,
    C_SOURCE_FILE, C_EVENT_TIME, C_CAPTURE_TIME, C_CONTROLLER_ID, C_CONTROLLER_EPOCH, C_METADATA_VERSION,
    C_BOOTSTRAP, C_PREV_HASH, C_HASH,
    C_TOPIC, C_TOPIC_ID, C_PARTITION, C_TOPIC_CHANGE,
    C_HAS_BEFORE, C_B_STATE, /* 10 columns: replicas isr adding removing elr last_known_elr leader
                                leader_epoch partition_epoch recovery */
    C_HAS_AFTER = C_B_STATE + 10, C_A_STATE,
    C_CHANGES = C_A_STATE + 10, C_ELECTION,
    C_CC_LEADER, C_CC_EPOCH, C_CC_PREV_LEADER, C_CC_PREV_EPOCH, C_CC_VOTERS,
    C_BROKER_ID, C_BROKER_CHANGE, C_BROKER_EPOCH, C_BROKER_FENCED, C_BROKER_SHUTDOWN, C_BROKER_RACK,
    C_BROKER_PREV_EPOCH, C_BROKER_PREV_FENCED,
    C_CONFIG_TYPE, C_CONFIG_RESOURCE, C_CONFIG_NAME, C_CONFIG_VALUE, C_CONFIG_PREV_VALUE,
    C_FEATURE, C_FEATURE_LEVEL, C_FEATURE_PREV_LEVEL,
    C_S_LEADER, C_S_LEADER_EPOCH, C_S_HW, C_S_HW_TIME, C_S_REPLICAS, C_S_LEOS,
    C_GAP_FROM, C_GAP_TO, C_UNKNOWN_API_KEY, C_UNKNOWN_VERSION, C_REASON,
    C_RQ_PRINCIPAL, C_RQ_API, C_RQ_CLIENT_ID, C_RQ_HOST, C_RQ_LISTENER, C_RQ_SOFTWARE_NAME, C_RQ_SOFTWARE_VERSION,
    C_RQ_FORWARDED, C_RQ_OUTCOME, C_RQ_OPERATION, C_RQ_RESOURCES, C_RQ_ERROR_CODES, C_RQ_BODY,
    C_RQ_LOG, C_RQ_CORRELATION_ID, C_RQ_LINE,
    NCOLS
};

typedef struct {
    const char *name;
    int kind;
} coldef_t;

#define STATE_COLS(p)                                                                                  \
    {p "replicas", K_LI32}, {p "isr", K_LI32}, {p "adding", K_LI32}, {p "removing", K_LI32},           \
        {p "elr", K_LI32}, {p "last_known_elr", K_LI32}, {p "leader", K_I32}, {p "leader_epoch", K_I32}, \
        {p "partition_epoch", K_I32}, {p "recovery", K_STR}

static const coldef_t COLDEFS[NCOLS] = {
    {"seq", K_I64}, {"event_id", K_STR}, {"cluster_id", K_STR}, {"kind", K_STR}, {"source_kind", K_STR},
    {"source_offset", K_I64}, {"source_index", K_I32}, {"source_node", K_I32}, {"source_file", K_STR},
    {"event_time_ms", K_I64}, {"capture_time_ms", K_I64}, {"controller_id", K_I32},
    {"controller_epoch", K_I32}, {"metadata_version", K_I32}, {"bootstrap", K_BOOL}, {"prev_hash", K_STR},
    {"hash", K_STR},
    {"topic", K_STR}, {"topic_id", K_STR}, {"partition", K_I32}, {"topic_change", K_STR},
    {"has_before", K_BOOL}, STATE_COLS("b_"), {"has_after", K_BOOL}, STATE_COLS("a_"),
    {"changes", K_LSTR}, {"election", K_STR},
    {"cc_leader", K_I32}, {"cc_epoch", K_I32}, {"cc_prev_leader", K_I32}, {"cc_prev_epoch", K_I32},
    {"cc_voters", K_LI32},
    {"broker_id", K_I32}, {"broker_change", K_STR}, {"broker_epoch", K_I64}, {"broker_fenced", K_BOOL},
    {"broker_shutdown", K_BOOL}, {"broker_rack", K_STR}, {"broker_prev_epoch", K_I64},
    {"broker_prev_fenced", K_BOOL},
    {"config_type", K_STR}, {"config_resource", K_STR}, {"config_name", K_STR}, {"config_value", K_STR},
    {"config_prev_value", K_STR},
    {"feature", K_STR}, {"feature_level", K_I32}, {"feature_prev_level", K_I32},
    {"s_leader", K_I32}, {"s_leader_epoch", K_I32}, {"s_hw", K_I64}, {"s_hw_time_ms", K_I64},
    {"s_replicas", K_LI32}, {"s_leos", K_LI64},
    {"gap_from", K_I64}, {"gap_to", K_I64}, {"unknown_api_key", K_I32}, {"unknown_version", K_I32},
    {"reason", K_STR},
    {"rq_principal", K_STR}, {"rq_api", K_STR}, {"rq_client_id", K_STR}, {"rq_host", K_STR},
    {"rq_listener", K_STR}, {"rq_software_name", K_STR}, {"rq_software_version", K_STR},
    {"rq_forwarded", K_BOOL}, {"rq_outcome", K_STR}, {"rq_operation", K_STR}, {"rq_resources", K_LSTR},
    {"rq_error_codes", K_LI32}, {"rq_body", K_STR}, {"rq_log", K_STR}, {"rq_correlation_id", K_I32},
    {"rq_line", K_I32},
};

/* Enum symbols and union branches of v2, in schema order (v1's are their first ones). */
typedef struct {
    const char *s;
    int32_t n;
} sym_t;
#define S(x) {x, (int32_t)sizeof(x) - 1}
#define N_SOURCE_KIND 8
static const sym_t SOURCE_KIND[] = {S("KRAFT_LOG"), S("KRAFT_SNAPSHOT"), S("ZOOKEEPER"), S("BROKER_LOG"),
                                          S("OFFSET_SAMPLER"), S("SIMULATOR"), S("UNKNOWN"), S("REQUEST_LOG")};
#define N_BROKER_CHANGE_KIND 7
static const sym_t BROKER_CHANGE_KIND[] = {S("REGISTERED"), S("FENCED"), S("UNFENCED"), S("CONTROLLED_SHUTDOWN"),
                                                 S("UNREGISTERED"), S("UPDATED"), S("UNKNOWN")};
#define N_TOPIC_CHANGE_KIND 3
static const sym_t TOPIC_CHANGE_KIND[] = {S("CREATED"), S("DELETED"), S("UNKNOWN")};
#define N_RECOVERY 3
static const sym_t RECOVERY[] = {S("RECOVERED"), S("RECOVERING"), S("UNKNOWN")};
#define N_PARTITION_CHANGE_KIND 12
static const sym_t PARTITION_CHANGE_KIND[] = {
    S("CREATE"), S("DELETE"), S("LEADER"), S("LEADER_EPOCH"), S("ISR"), S("REPLICAS"), S("REASSIGNMENT_START"),
    S("REASSIGNMENT_COMPLETE"), S("REASSIGNMENT_CANCEL"), S("ELR"), S("RECOVERY_STATE"), S("UNKNOWN")};
#define N_ELECTION 8
static const sym_t ELECTION[] = {S("NONE"), S("PREFERRED"), S("CLEAN"), S("UNCLEAN"), S("ELR"), S("REASSIGNMENT"),
                                       S("CONTROLLED_SHUTDOWN"), S("UNKNOWN")};
#define N_CONFIG_TYPE 6
static const sym_t CONFIG_TYPE[] = {S("TOPIC"), S("BROKER"), S("BROKER_LOGGER"), S("CLIENT_METRICS"), S("GROUP"),
                                          S("UNKNOWN")};
#define N_PAYLOAD 10
static const sym_t PAYLOAD[] = {S("ControllerChange"), S("BrokerChange"), S("TopicChange"), S("PartitionChange"),
                                      S("ConfigChange"), S("FeatureLevelChange"), S("OffsetSample"), S("CaptureGap"),
                                      S("UnknownRecord"), S("ClientRequest")};

/* A column under construction. `data`: values (I32/I64), value bits (BOOL) or int32 offsets
   (STR and lists, n+1 entries). `v`: characters (STR), child values (LI32/LI64) or child offsets
   (LSTR). `v2`: child characters (LSTR). Fixed-size buffers are sized by the batch's row
   capacity; v/v2 grow on their own. */
typedef struct {
    uint8_t *p;
    size_t len, cap;
} vec_t;

typedef struct {
    int kind;
    int64_t nulls; /* counted when the batch is handed over */
    uint8_t *valid;
    uint8_t *data;
    vec_t v, v2;
    int64_t child_len;
} col_t;

/* Variable-size buffers of one batch stay below this, so int32 offsets never overflow. */
#define BATCH_VAR_LIMIT ((size_t)1 << 30)
#define BATCH_ROW_LIMIT ((int64_t)1 << 21)

typedef struct {
    int64_t n, cap;
    uint64_t set[2]; /* columns set in the current row */
    col_t c[NCOLS];
    err_t *e;
} batch_t;

/* Columns whose NULL needs a write (an offset); fixed-size NULLs are the zeroed buffers. */
static uint64_t OFFSET_COLS[2];

#define MARK(b, ci) ((b)->set[(ci) >> 6] |= (uint64_t)1 << ((ci)&63))

/* Ask for transparent huge pages on a large fresh buffer: fewer page faults while filling it. */
static void advise_huge(void *p, size_t len)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)1 << 21;
    if (len < 2 * huge)
        return;
    uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1), end = ((uintptr_t)p + len) & ~(huge - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)p;
    (void)len;
#endif
}

static void vec_reserve(batch_t *b, vec_t *v, size_t add)
{
    if (v->len + add <= v->cap)
        return;
    if (v->len + add > (size_t)INT32_MAX)
        fail(b->e, E_LIMIT, "a column of one batch exceeds 2 GiB");
    size_t cap = v->cap ? v->cap : 256;
    while (cap < v->len + add)
        cap *= 2;
    uint8_t *p = realloc(v->p, cap);
    if (!p)
        fail(b->e, E_NOMEM, "out of memory");
    v->p = p;
    v->cap = cap;
}

static void batch_free(batch_t *b)
{
    if (!b)
        return;
    for (int i = 0; i < NCOLS; i++) {
        free(b->c[i].valid);
        free(b->c[i].data);
        free(b->c[i].v.p);
        free(b->c[i].v2.p);
    }
    free(b);
}

static size_t fixed_bytes(int kind, int64_t rows)
{
    switch (kind) {
    case K_I32:
        return (size_t)rows * 4;
    case K_I64:
        return (size_t)rows * 8;
    case K_BOOL:
        return (size_t)(rows / 8 + 1);
    default:
        return (size_t)(rows + 1) * 4;
    }
}

/* Grow every column's fixed-size buffers to `rows` rows (new bitmap bytes zeroed). */
static void batch_grow(batch_t *b, int64_t rows)
{
    for (int i = 0; i < NCOLS; i++) {
        col_t *c = &b->c[i];
        size_t old_bits = b->cap ? (size_t)(b->cap / 8 + 1) : 0, new_bits = (size_t)(rows / 8 + 1);
        uint8_t *v = realloc(c->valid, new_bits);
        if (!v)
            fail(b->e, E_NOMEM, "out of memory");
        memset(v + old_bits, 0, new_bits - old_bits);
        c->valid = v;
        size_t old_fixed = b->cap ? fixed_bytes(c->kind, b->cap) : 0, new_fixed = fixed_bytes(c->kind, rows);
        uint8_t *d = realloc(c->data, new_fixed);
        if (!d)
            fail(b->e, E_NOMEM, "out of memory");
        memset(d + old_fixed, 0, new_fixed - old_fixed);
        c->data = d;
    }
    b->cap = rows;
}

/* A batch with room for `rows` rows. calloc: large zeroed blocks are fresh pages, touched only
   when written, so a generous estimate costs address space, not time. */
static batch_t *batch_new(err_t *e, int64_t rows)
{
    batch_t *b = calloc(1, sizeof *b);
    if (!b)
        fail(e, E_NOMEM, "out of memory");
    b->e = e;
    b->cap = rows;
    for (int i = 0; i < NCOLS; i++) {
        col_t *c = &b->c[i];
        c->kind = COLDEFS[i].kind;
        c->valid = calloc(1, (size_t)(rows / 8 + 1));
        c->data = calloc(1, fixed_bytes(c->kind, rows));
        if (!c->valid || !c->data) {
            batch_free(b);
            fail(e, E_NOMEM, "out of memory");
        }
        advise_huge(c->data, fixed_bytes(c->kind, rows));
    }
    return b;
}

/* After the first block of a batch: reserve the variable-size buffers for the rows expected,
   extrapolated from the bytes per row so far (one realloc instead of a series of doublings). */
static void batch_project(batch_t *b)
{
    if (b->n == 0 || b->cap < 4 * b->n)
        return;
    double scale = 1.15 * (double)b->cap / (double)b->n;
    for (int i = 0; i < NCOLS; i++) {
        vec_t *vs[2] = {&b->c[i].v, &b->c[i].v2};
        for (int k = 0; k < 2; k++) {
            vec_t *v = vs[k];
            double want = (double)v->len * scale + 1024;
            if (v->len == 0 || want > (double)BATCH_VAR_LIMIT || (size_t)want <= v->cap)
                continue;
            uint8_t *p = realloc(v->p, (size_t)want);
            if (p) {
                v->p = p;
                v->cap = (size_t)want;
                advise_huge(p, v->cap);
            }
        }
    }
}

#define SETBIT(bits, i) ((bits)[(i) >> 3] |= (uint8_t)(1u << ((i)&7)))
#define OFFS(c) ((int32_t *)(c)->data)

/* NULL is the default: nothing to write now (see row_end) */
static inline void put_null(batch_t *b, int ci) { (void)b; (void)ci; }

/* Close the row: string/list columns the record did not set repeat their last offset. */
static inline void row_end(batch_t *b)
{
    for (int w = 0; w < 2; w++) {
        uint64_t miss = ~b->set[w] & OFFSET_COLS[w];
        while (miss) {
            col_t *c = &b->c[w * 64 + __builtin_ctzll(miss)];
            OFFS(c)[b->n + 1] = OFFS(c)[b->n];
            miss &= miss - 1;
        }
        b->set[w] = 0;
    }
    b->n++;
}

static inline void put_i32(batch_t *b, int ci, int32_t v)
{
    MARK(b, ci);
    col_t *c = &b->c[ci];
    ((int32_t *)c->data)[b->n] = v;
    SETBIT(c->valid, b->n);
}

static inline void put_i64(batch_t *b, int ci, int64_t v)
{
    MARK(b, ci);
    col_t *c = &b->c[ci];
    ((int64_t *)c->data)[b->n] = v;
    SETBIT(c->valid, b->n);
}

static inline void put_bool(batch_t *b, int ci, int v)
{
    MARK(b, ci);
    col_t *c = &b->c[ci];
    if (v)
        SETBIT(c->data, b->n);
    SETBIT(c->valid, b->n);
}

static inline void put_str(batch_t *b, int ci, const uint8_t *s, int32_t n)
{
    MARK(b, ci);
    col_t *c = &b->c[ci];
    if (n > 0) { /* an empty string may meet a buffer not allocated yet */
        vec_reserve(b, &c->v, (size_t)n);
        memcpy(c->v.p + c->v.len, s, (size_t)n);
        c->v.len += (size_t)n;
    }
    OFFS(c)[b->n + 1] = (int32_t)c->v.len;
    SETBIT(c->valid, b->n);
}

static inline void put_sym(batch_t *b, int ci, sym_t sym) { put_str(b, ci, (const uint8_t *)sym.s, sym.n); }

static inline void put_sv(batch_t *b, int ci, sv_t s)
{
    if (s.p)
        put_str(b, ci, s.p, s.n);
    else
        put_null(b, ci);
}

/* A string read from the record, put into column ci; the bytes, for what else needs them (the hashes). */
static inline sv_t put_rd_str(rd_t *r, batch_t *b, int ci)
{
    sv_t s = rd_str(r);
    put_str(b, ci, s.p, s.n);
    return s;
}

/* close a list value: its end offset is the current child count */
static inline void put_list_end(batch_t *b, int ci)
{
    MARK(b, ci);
    col_t *c = &b->c[ci];
    OFFS(c)[b->n + 1] = (int32_t)c->child_len;
    SETBIT(c->valid, b->n);
}

/* ------------------------------------------------------------------------------------------ */
/* the record decoder (v1 and v2)                                                             */

static void rd_int_list(rd_t *r, batch_t *b, int ci) /* ci < 0: validate and drop */
{
    col_t *c = ci >= 0 ? &b->c[ci] : NULL;
    int64_t cnt;
    while ((cnt = rd_block_count(r)) != 0) {
        if (c) {
            vec_reserve(b, &c->v, (size_t)cnt * 4);
            int32_t *out = (int32_t *)(c->v.p + c->v.len);
            for (int64_t i = 0; i < cnt; i++)
                out[i] = rd_int(r);
            c->v.len += (size_t)cnt * 4;
            c->child_len += cnt;
            if (c->child_len > INT32_MAX)
                fail(b->e, E_LIMIT, "list column too long");
        } else {
            for (int64_t i = 0; i < cnt; i++)
                (void)rd_int(r);
        }
    }
    if (c)
        put_list_end(b, ci);
}

/* an array of strings into an LSTR column */
static void rd_str_list(rd_t *r, batch_t *b, int ci)
{
    col_t *c = &b->c[ci];
    int64_t cnt;
    while ((cnt = rd_block_count(r)) != 0) {
        for (int64_t i = 0; i < cnt; i++) {
            sv_t v = rd_str(r);
            if (v.n > 0) {
                vec_reserve(b, &c->v2, (size_t)v.n);
                memcpy(c->v2.p + c->v2.len, v.p, (size_t)v.n);
                c->v2.len += (size_t)v.n;
            }
            if (c->child_len == 0) { /* the child offsets start with 0 */
                vec_reserve(b, &c->v, 8);
                memset(c->v.p, 0, 4);
                c->v.len = 4;
            }
            vec_reserve(b, &c->v, 4);
            if (c->v2.len > INT32_MAX)
                fail(b->e, E_LIMIT, "list column too long");
            int32_t end = (int32_t)c->v2.len;
            memcpy(c->v.p + c->v.len, &end, 4);
            c->v.len += 4;
            c->child_len++;
        }
    }
    put_list_end(b, ci);
}

static void rd_str_list_drop(rd_t *r)
{
    int64_t cnt;
    while ((cnt = rd_block_count(r)) != 0)
        for (int64_t i = 0; i < cnt; i++)
            (void)rd_str(r);
}

static inline sv_t rd_opt_str(rd_t *r)
{
    sv_t none = {NULL, 0};
    return rd_index(r, 2, "union") ? rd_str(r) : none;
}

static void rd_partition_state(rd_t *r, batch_t *b, int base)
{
    for (int i = 0; i < 6; i++)
        rd_int_list(r, b, base + i);
    put_i32(b, base + 6, rd_int(r));
    put_i32(b, base + 7, rd_int(r));
    put_i32(b, base + 8, rd_int(r));
    put_sym(b, base + 9, RECOVERY[rd_index(r, N_RECOVERY, "enum LeaderRecoveryState")]);
}

typedef struct {
    int present;
    int64_t epoch;
    sv_t rack;
    int fenced, shutdown;
} broker_state_t;

static void rd_broker_state(rd_t *r, broker_state_t *s)
{
    s->present = 1;
    (void)rd_int(r);       /* broker_id */
    s->epoch = rd_long(r); /* epoch */
    (void)rd_opt_str(r);   /* incarnation_id */
    s->rack = rd_opt_str(r);
    s->fenced = rd_bool(r);
    s->shutdown = rd_bool(r);
    rd_str_list_drop(r); /* endpoints */
}

static void rd_record(rd_t *r, batch_t *b)
{
    sv_t s;
    /* envelope */
    put_rd_str(r, b, C_EVENT_ID);
    put_rd_str(r, b, C_CLUSTER_ID);
    r->seq = rd_long(r);
    put_i64(b, C_SEQ, r->seq);
    put_sym(b, C_SOURCE_KIND, SOURCE_KIND[rd_index(r, r->n_source_kind, "enum SourceKind")]);
    put_i32(b, C_SOURCE_NODE, rd_int(r));
    put_i64(b, C_SOURCE_OFFSET, rd_long(r));
    put_i32(b, C_SOURCE_INDEX, rd_int(r));
    if (rd_index(r, 2, "union"))
        (void)rd_long(r); /* zxid */
    put_sv(b, C_SOURCE_FILE, rd_opt_str(r));
    r->line = -1;
    if (rd_index(r, 2, "union")) {
        int64_t line = rd_long(r);
        r->line = line >= 0 && line <= INT32_MAX ? (int32_t)line : -1;
    }
    put_i64(b, C_EVENT_TIME, rd_long(r));
    put_i64(b, C_CAPTURE_TIME, rd_long(r));
    put_i32(b, C_CONTROLLER_ID, rd_int(r));
    put_i32(b, C_CONTROLLER_EPOCH, rd_int(r));
    if (rd_index(r, 2, "union"))
        put_i32(b, C_METADATA_VERSION, rd_int(r));
    put_bool(b, C_BOOTSTRAP, rd_bool(r));
    s = put_rd_str(r, b, C_PREV_HASH);
    r->prev_p = s.p;
    r->prev_n = s.n;
    r->h_start = r->p;
    s = put_rd_str(r, b, C_HASH);
    r->hash_p = s.p;
    r->hash_n = s.n;
    r->h_end = r->p;

    int branch = rd_index(r, r->n_payload, "payload union");
    put_sym(b, C_KIND, PAYLOAD[branch]);
    switch (branch) {
    case 0: /* ControllerChange */
        put_i32(b, C_CC_LEADER, rd_int(r));
        put_i32(b, C_CC_EPOCH, rd_int(r));
        put_i32(b, C_CC_PREV_LEADER, rd_int(r));
        put_i32(b, C_CC_PREV_EPOCH, rd_int(r));
        rd_int_list(r, b, C_CC_VOTERS);
        rd_int_list(r, b, -1); /* granting_voters */
        break;
    case 1: { /* BrokerChange */
        broker_state_t before = {0}, after = {0};
        put_i32(b, C_BROKER_ID, rd_int(r));
        put_sym(b, C_BROKER_CHANGE, BROKER_CHANGE_KIND[rd_index(r, N_BROKER_CHANGE_KIND, "enum BrokerChangeKind")]);
        if (rd_index(r, 2, "union"))
            rd_broker_state(r, &before);
        if (rd_index(r, 2, "union"))
            rd_broker_state(r, &after);
        broker_state_t *cur = after.present ? &after : (before.present ? &before : NULL);
        if (cur) {
            put_i64(b, C_BROKER_EPOCH, cur->epoch);
            put_sv(b, C_BROKER_RACK, cur->rack);
        }
        if (after.present) {
            put_bool(b, C_BROKER_FENCED, after.fenced);
            put_bool(b, C_BROKER_SHUTDOWN, after.shutdown);
        }
        if (before.present) {
            put_i64(b, C_BROKER_PREV_EPOCH, before.epoch);
            put_bool(b, C_BROKER_PREV_FENCED, before.fenced);
        }
        break;
    }
    case 2: /* TopicChange */
        put_sym(b, C_TOPIC_CHANGE, TOPIC_CHANGE_KIND[rd_index(r, N_TOPIC_CHANGE_KIND, "enum TopicChangeKind")]);
        put_rd_str(r, b, C_TOPIC);
        put_rd_str(r, b, C_TOPIC_ID);
        break;
    case 3: { /* PartitionChange */
        put_rd_str(r, b, C_TOPIC);
        put_rd_str(r, b, C_TOPIC_ID);
        put_i32(b, C_PARTITION, rd_int(r));
        int has = rd_index(r, 2, "union");
        put_bool(b, C_HAS_BEFORE, has);
        if (has)
            rd_partition_state(r, b, C_B_STATE);
        has = rd_index(r, 2, "union");
        put_bool(b, C_HAS_AFTER, has);
        if (has)
            rd_partition_state(r, b, C_A_STATE);
        col_t *c = &b->c[C_CHANGES];
        int64_t cnt;
        while ((cnt = rd_block_count(r)) != 0) {
            for (int64_t i = 0; i < cnt; i++) {
                sym_t sym = PARTITION_CHANGE_KIND[rd_index(r, N_PARTITION_CHANGE_KIND, "enum PartitionChangeKind")];
                size_t n = (size_t)sym.n;
                vec_reserve(b, &c->v2, n);
                memcpy(c->v2.p + c->v2.len, sym.s, n);
                c->v2.len += n;
                vec_reserve(b, &c->v, 4);
                if (c->child_len == 0) { /* the child offsets start with 0 */
                    vec_reserve(b, &c->v, 8);
                    memset(c->v.p, 0, 4);
                    c->v.len = 4;
                }
                int32_t end = (int32_t)c->v2.len;
                memcpy(c->v.p + c->v.len, &end, 4);
                c->v.len += 4;
                c->child_len++;
            }
        }
        put_list_end(b, C_CHANGES);
        put_sym(b, C_ELECTION, ELECTION[rd_index(r, N_ELECTION, "enum ElectionType")]);
        put_sv(b, C_REASON, rd_opt_str(r));
        break;
    }
    case 4: /* ConfigChange */
        put_sym(b, C_CONFIG_TYPE, CONFIG_TYPE[rd_index(r, N_CONFIG_TYPE, "enum ConfigResourceType")]);
        put_rd_str(r, b, C_CONFIG_RESOURCE);
        put_rd_str(r, b, C_CONFIG_NAME);
        put_sv(b, C_CONFIG_VALUE, rd_opt_str(r));
        put_sv(b, C_CONFIG_PREV_VALUE, rd_opt_str(r));
        (void)rd_bool(r); /* redacted */
        break;
    case 5: /* FeatureLevelChange */
        put_rd_str(r, b, C_FEATURE);
        put_i32(b, C_FEATURE_LEVEL, rd_int(r));
        if (rd_index(r, 2, "union"))
            put_i32(b, C_FEATURE_PREV_LEVEL, rd_int(r));
        break;
    case 6: { /* OffsetSample */
        put_rd_str(r, b, C_TOPIC);
        put_i32(b, C_PARTITION, rd_int(r));
        put_i32(b, C_S_LEADER, rd_int(r));
        put_i32(b, C_S_LEADER_EPOCH, rd_int(r));
        put_i64(b, C_S_HW, rd_long(r));
        put_i64(b, C_S_HW_TIME, rd_long(r));
        col_t *ids = &b->c[C_S_REPLICAS], *leos = &b->c[C_S_LEOS];
        int64_t cnt;
        while ((cnt = rd_block_count(r)) != 0) {
            vec_reserve(b, &ids->v, (size_t)cnt * 4);
            vec_reserve(b, &leos->v, (size_t)cnt * 8);
            for (int64_t i = 0; i < cnt; i++) {
                int32_t id = rd_int(r);
                int64_t leo = rd_long(r);
                (void)rd_long(r); /* time_ms */
                memcpy(ids->v.p + ids->v.len, &id, 4);
                ids->v.len += 4;
                memcpy(leos->v.p + leos->v.len, &leo, 8);
                leos->v.len += 8;
            }
            ids->child_len += cnt;
            leos->child_len += cnt;
            if (ids->child_len > INT32_MAX)
                fail(b->e, E_LIMIT, "list column too long");
        }
        put_list_end(b, C_S_REPLICAS);
        put_list_end(b, C_S_LEOS);
        (void)rd_str(r); /* sample_order */
        break;
    }
    case 7: /* CaptureGap */
        put_i64(b, C_GAP_FROM, rd_long(r));
        put_i64(b, C_GAP_TO, rd_long(r));
        put_rd_str(r, b, C_REASON);
        break;
    case 8: /* UnknownRecord */
        put_i32(b, C_UNKNOWN_API_KEY, rd_int(r));
        put_i32(b, C_UNKNOWN_VERSION, rd_int(r));
        (void)rd_bytes(r); /* data */
        put_rd_str(r, b, C_REASON);
        break;
    case 9: /* ClientRequest (v2) */
        put_rd_str(r, b, C_RQ_LOG);
        (void)rd_str(r); /* form */
        (void)rd_str(r); /* level */
        put_rd_str(r, b, C_RQ_PRINCIPAL);
        put_sv(b, C_RQ_API, rd_opt_str(r));
        for (int i = 0; i < 2; i++) /* api_key, api_version */
            if (rd_index(r, 2, "union"))
                (void)rd_int(r);
        if (rd_index(r, 2, "union"))
            put_i32(b, C_RQ_CORRELATION_ID, rd_int(r));
        if (r->line >= 0)
            put_i32(b, C_RQ_LINE, r->line);
        put_sv(b, C_RQ_CLIENT_ID, rd_opt_str(r));
        put_sv(b, C_RQ_HOST, rd_opt_str(r));
        put_sv(b, C_RQ_LISTENER, rd_opt_str(r));
        (void)rd_opt_str(r); /* security_protocol */
        put_sv(b, C_RQ_SOFTWARE_NAME, rd_opt_str(r));
        put_sv(b, C_RQ_SOFTWARE_VERSION, rd_opt_str(r));
        (void)rd_opt_str(r); /* connection */
        if (rd_index(r, 2, "union"))
            put_bool(b, C_RQ_FORWARDED, rd_bool(r));
        put_sv(b, C_RQ_OUTCOME, rd_opt_str(r));
        put_sv(b, C_RQ_OPERATION, rd_opt_str(r));
        rd_str_list(r, b, C_RQ_RESOURCES);
        (void)rd_opt_str(r); /* rule */
        if (rd_index(r, 2, "union"))
            (void)rd_int(r); /* ref_count */
        rd_int_list(r, b, C_RQ_ERROR_CODES);
        put_sv(b, C_RQ_BODY, rd_opt_str(r));
        break;
    }
    row_end(b);
}

/* ------------------------------------------------------------------------------------------ */
/* the container file                                                                          */

typedef struct {
    err_t e;
    batch_t **batches;
    int nbatches, capbatches;
    batch_t *cur;
    uint8_t *scratch; /* inflated block */
    size_t scratch_cap;
    int64_t max_block; /* what a block may inflate to (schemas.archive.container.MAX_BLOCK_BYTES) */
    z_stream zs;
    int zs_init;
    int64_t index;     /* records decoded so far */
    int64_t rows_left; /* records the block headers still announce (an estimate) */
    int64_t batch_rows; /* a batch is handed over once it holds this many rows (at a block end) */
    int verify;         /* check each record's hash and its link to the one before (check_chain) */
    int64_t next_seq;   /* with verify: the seq the next record must carry */
    uint8_t head[64];   /* with verify: the hash its prev_hash must equal (head_n bytes) */
    int head_n;
    int version; /* the writer schema's: 1 or 2 */
} dec_t;

static void dec_push_batch(dec_t *d)
{
    if (!d->cur || d->cur->n == 0)
        return;
    if (d->nbatches == d->capbatches) {
        int cap = d->capbatches ? d->capbatches * 2 : 8;
        batch_t **p = realloc(d->batches, sizeof *p * (size_t)cap);
        if (!p)
            fail(&d->e, E_NOMEM, "out of memory");
        d->batches = p;
        d->capbatches = cap;
    }
    d->batches[d->nbatches++] = d->cur;
    d->cur = NULL;
}

static int batch_full(batch_t *b, int64_t batch_rows)
{
    if (b->n >= batch_rows)
        return 1;
    for (int i = 0; i < NCOLS; i++)
        if (b->c[i].v.len > BATCH_VAR_LIMIT || b->c[i].v2.len > BATCH_VAR_LIMIT)
            return 1;
    return 0;
}

static void block_too_large(dec_t *d, int64_t at) __attribute__((noreturn));
static void block_too_large(dec_t *d, int64_t at)
{
    fail(&d->e, E_DATA, "the deflate block at byte %lld inflates to more than %lld bytes (the most an archive "
         "block may hold: a decompression bomb, or not an archive of ctrlaudit's)", (long long)at,
         (long long)d->max_block);
}

/* The inflate buffer grown to `cap` bytes, at most one past the largest block (to know when one is passed). */
static void grow_scratch(dec_t *d, size_t cap)
{
    if (cap > (size_t)d->max_block + 1)
        cap = (size_t)d->max_block + 1;
    uint8_t *p = realloc(d->scratch, cap);
    if (!p)
        fail(&d->e, E_NOMEM, "out of memory");
    d->scratch = p;
    d->scratch_cap = cap;
}

static void inflate_block(dec_t *d, const uint8_t *src, int64_t n, int64_t at, const uint8_t **out,
                          int64_t *out_len)
{
    if (!d->zs_init) {
        memset(&d->zs, 0, sizeof d->zs);
        if (inflateInit2(&d->zs, -15) != Z_OK)
            fail(&d->e, E_NOMEM, "zlib inflateInit2 failed");
        d->zs_init = 1;
    } else if (inflateReset(&d->zs) != Z_OK)
        fail(&d->e, E_DATA, "zlib inflateReset failed");
    if (d->scratch_cap < (size_t)n * 4 + 4096 && d->scratch_cap <= (size_t)d->max_block)
        grow_scratch(d, (size_t)n * 4 + 4096);
    /* feed in chunks of at most 1 GiB: avail_in is a uInt. Bytes after the end of the stream are
       ignored, as Python's zlib.decompressobj(-15).decompress does (fastavro writes zlib.compress
       output minus its 2-byte header and the last byte of the checksum: 3 bytes follow the
       stream). */
    d->zs.next_in = NULL;
    d->zs.avail_in = 0;
    const uint8_t *in = src;
    int64_t left = n;
    size_t produced = 0;
    for (;;) {
        if (d->zs.avail_in == 0 && left > 0) {
            uInt chunk = left > (1 << 30) ? (1u << 30) : (uInt)left;
            d->zs.next_in = (Bytef *)in;
            d->zs.avail_in = chunk;
            in += chunk;
            left -= chunk;
        }
        if (produced == d->scratch_cap) {
            /* a bomb stops here, having cost at most the limit (plus one byte to know it is passed) */
            if (produced > (size_t)d->max_block)
                block_too_large(d, at);
            grow_scratch(d, d->scratch_cap * 2);
        }
        size_t room = d->scratch_cap - produced;
        if (room > (1u << 30))
            room = 1u << 30;
        d->zs.next_out = d->scratch + produced;
        d->zs.avail_out = (uInt)room;
        int rc = inflate(&d->zs, Z_NO_FLUSH);
        produced += room - d->zs.avail_out;
        if (rc == Z_STREAM_END)
            break;
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR && d->zs.avail_out != 0 && d->zs.avail_in == 0 && left == 0)
            fail(&d->e, E_DATA, "deflate stream of a block is truncated");
        if (rc == Z_BUF_ERROR)
            continue;
        if (rc == Z_MEM_ERROR)
            fail(&d->e, E_NOMEM, "out of memory (zlib)");
        fail(&d->e, E_DATA, "invalid deflate data in a block: %s", d->zs.msg ? d->zs.msg : "zlib error");
    }
    if (produced > (size_t)d->max_block)
        block_too_large(d, at);
    *out = d->scratch;
    *out_len = (int64_t)produced;
}

/* Decode the blocks of data[offset:len]. Returns 0 or an E_* kind (message in d->e.msg). */
/* The number of records the blocks of the file claim (a pre-pass over block headers only; stops
   silently at anything odd, decode_blocks reports it). Counts are trusted only as far as the
   bytes could hold them. */
static int64_t estimate_rows(const uint8_t *data, int64_t len, int64_t offset, int deflate)
{
    err_t e;
    volatile int64_t total = 0;
    if (setjmp(e.jb))
        return total;
    rd_t f = {data + offset, data + len, &e};
    while (f.p < f.end) {
        int64_t count = rd_long(&f), size = rd_long(&f);
        if (count < 0 || size < 0 || size > REMAIN(&f) - 16)
            break;
        if (count > (deflate ? size * 1032 : size))
            break;
        total += count;
        f.p += size + 16;
    }
    return total;
}

/* The chain rule of schemas/archive/chain.py, on the record's own bytes: hash = sha256(prev_hash || the
   record's Avro body with the hash field written as the empty string). The body is the record as
   stored (v1 files only reach this decoder), so it is hashed in three pieces around the hash field,
   whose empty-string encoding is the single byte 0. Messages start with the kind of break
   (schemas.archive.verified turns them into findings). */
static void check_chain(dec_t *d, const rd_t *r, const uint8_t *rec_start)
{
#ifdef CTRLAUDIT_CHAIN
    static const char HEX[] = "0123456789abcdef";
    if (r->seq != d->next_seq) {
        if (r->seq > d->next_seq)
            fail(&d->e, E_CHAIN, "missing:seq %lld follows seq %lld", (long long)r->seq, (long long)(d->next_seq - 1));
        fail(&d->e, E_CHAIN, "reordered:seq %lld where seq %lld was expected", (long long)r->seq,
             (long long)d->next_seq);
    }
    if (r->prev_n != d->head_n || memcmp(r->prev_p, d->head, (size_t)d->head_n) != 0)
        fail(&d->e, E_CHAIN, "unchained:seq %lld: its prev_hash %.64s is not the hash %.64s of the event before it",
             (long long)r->seq, r->prev_n >= 12 ? (const char *)r->prev_p : "(short)",
             d->head_n >= 12 ? (const char *)d->head : "(none)");
    SHA256_CTX c;
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[64];
    SHA256_Init(&c);
    SHA256_Update(&c, r->prev_p, (size_t)r->prev_n);
    SHA256_Update(&c, rec_start, (size_t)(r->h_start - rec_start));
    SHA256_Update(&c, "", 1);
    SHA256_Update(&c, r->h_end, (size_t)(r->p - r->h_end));
    SHA256_Final(md, &c);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        hex[2 * i] = HEX[md[i] >> 4];
        hex[2 * i + 1] = HEX[md[i] & 15];
    }
    if (r->hash_n != 64 || memcmp(hex, r->hash_p, 64) != 0)
        fail(&d->e, E_CHAIN, "altered:seq %lld: its hash does not match its content", (long long)r->seq);
    memcpy(d->head, r->hash_p, 64);
    d->head_n = 64;
    d->next_seq++;
#else
    (void)r;
    (void)rec_start;
    fail(&d->e, E_LIMIT, "built without OpenSSL: cannot verify the chain natively");
#endif
}

static int decode_blocks(dec_t *d, const uint8_t *data, int64_t len, int64_t offset, const uint8_t *sync,
                         int deflate)
{
    if (setjmp(d->e.jb))
        return d->e.kind;
    d->rows_left = estimate_rows(data, len, offset, deflate);
    rd_t f = {data + offset, data + len, &d->e};
    while (f.p < f.end) {
        int64_t count = rd_long(&f);
        if (count < 0)
            fail(&d->e, E_DATA, "negative block count %lld", (long long)count);
        int64_t size = rd_long(&f);
        if (size < 0)
            fail(&d->e, E_DATA, "negative block size %lld", (long long)size);
        if (size > REMAIN(&f))
            fail(&d->e, E_DATA, "block of %lld bytes but only %lld left in the file", (long long)size,
                 (long long)REMAIN(&f));
        const uint8_t *block = f.p;
        int64_t block_len = size;
        f.p += size;
        if (deflate)
            inflate_block(d, block, size, block - data, &block, &block_len); /* at: where its bytes start */
        if (count > block_len)
            fail(&d->e, E_DATA, "block claims %lld records in %lld bytes", (long long)count, (long long)block_len);
        if (!d->cur) {
            int64_t rows = d->rows_left > count ? d->rows_left : count;
            if (rows > d->batch_rows)
                rows = d->batch_rows;
            d->cur = batch_new(&d->e, rows > 16 ? rows : 16);
        }
        batch_t *b = d->cur;
        int first_block = b->n == 0;
        rd_t r = {block, block + block_len, &d->e};
        r.n_payload = d->version >= 2 ? N_PAYLOAD : N_PAYLOAD - 1;
        r.n_source_kind = d->version >= 2 ? N_SOURCE_KIND : N_SOURCE_KIND - 1;
        for (int64_t i = 0; i < count; i++) {
            if (b->n == b->cap)
                batch_grow(b, b->cap * 2);
            const uint8_t *rec_start = r.p;
            rd_record(&r, b);
            if (d->verify)
                check_chain(d, &r, rec_start);
            d->index++;
        }
        d->rows_left -= count;
        if (first_block)
            batch_project(b);
        if (r.p != r.end)
            fail(&d->e, E_DATA, "%lld bytes left over after the last record of a block", (long long)(r.end - r.p));
        if (REMAIN(&f) < 16 || memcmp(f.p, sync, 16) != 0)
            fail(&d->e, E_DATA, "expected sync marker not found");
        f.p += 16;
        if (batch_full(b, d->batch_rows))
            dec_push_batch(d);
    }
    dec_push_batch(d);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Python glue                                                                                 */

/* A read-only buffer owning malloc'd memory (freed with the object): Arrow buffers without a copy. */
typedef struct {
    PyObject_HEAD void *ptr;
    Py_ssize_t len;
} BufObject;

static int buf_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BufObject *b = (BufObject *)self;
    return PyBuffer_FillInfo(view, self, b->ptr, b->len, 1, flags);
}

static void buf_dealloc(PyObject *self)
{
    free(((BufObject *)self)->ptr);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t buf_length(PyObject *self) { return ((BufObject *)self)->len; }

static PyBufferProcs buf_as_buffer = {buf_getbuffer, NULL};
static PySequenceMethods buf_as_sequence = {.sq_length = buf_length};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "schemas._flatdecode.Buffer",
    .tp_basicsize = sizeof(BufObject),
    .tp_dealloc = buf_dealloc,
    .tp_as_buffer = &buf_as_buffer,
    .tp_as_sequence = &buf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only memory filled by the decoder.",
};

/* Takes ownership of *p (set to NULL). */
static PyObject *take_buf(uint8_t **p, size_t len)
{
    BufObject *o = PyObject_New(BufObject, &BufType);
    if (!o)
        return NULL;
    if (!*p) {
        *p = malloc(1);
        if (!*p) {
            Py_DECREF(o);
            return PyErr_NoMemory();
        }
    }
    o->ptr = *p;
    o->len = (Py_ssize_t)len;
    *p = NULL;
    return (PyObject *)o;
}

/* (kind, length, null_count, validity|None, data, v|None, v2|None, child_len) */
static int64_t count_set(const uint8_t *bits, int64_t n)
{
    int64_t set = 0, i = 0, nbytes = (n + 7) / 8; /* bits past n are never set */
    for (; i + 8 <= nbytes; i += 8) {
        uint64_t w;
        memcpy(&w, bits + i, 8);
        set += __builtin_popcountll(w);
    }
    for (; i < nbytes; i++)
        set += __builtin_popcount(bits[i]);
    return set;
}

static PyObject *col_to_py(col_t *c, int64_t n)
{
    PyObject *valid = NULL, *data = NULL, *v = NULL, *v2 = NULL;
    c->nulls = n - count_set(c->valid, n);
    if (c->nulls) {
        valid = take_buf(&c->valid, (size_t)(n + 7) / 8);
        if (!valid)
            goto err;
    } else {
        valid = Py_NewRef(Py_None);
    }
    size_t dlen = c->kind == K_BOOL ? (size_t)(n + 7) / 8 : fixed_bytes(c->kind, n);
    data = take_buf(&c->data, dlen);
    if (!data)
        goto err;
    if (c->kind == K_STR || c->kind == K_LI32 || c->kind == K_LI64 || c->kind == K_LSTR) {
        if (c->kind == K_LSTR && c->v.len == 0) { /* no child at all: child offsets are [0] */
            uint8_t *z = calloc(1, 4);
            if (!z) {
                PyErr_NoMemory();
                goto err;
            }
            free(c->v.p);
            c->v.p = z;
            c->v.len = 4;
        }
        v = take_buf(&c->v.p, c->v.len);
        if (!v)
            goto err;
    } else {
        v = Py_NewRef(Py_None);
    }
    if (c->kind == K_LSTR) {
        v2 = take_buf(&c->v2.p, c->v2.len);
        if (!v2)
            goto err;
    } else {
        v2 = Py_NewRef(Py_None);
    }
    return Py_BuildValue("iLLNNNNL", c->kind, (long long)n, (long long)c->nulls, valid, data, v, v2,
                         (long long)c->child_len);
err:
    Py_XDECREF(valid);
    Py_XDECREF(data);
    Py_XDECREF(v);
    Py_XDECREF(v2);
    return NULL;
}

static PyObject *batch_to_py(batch_t *b)
{
    PyObject *cols = PyTuple_New(NCOLS);
    if (!cols)
        return NULL;
    for (int i = 0; i < NCOLS; i++) {
        PyObject *c = col_to_py(&b->c[i], b->n);
        if (!c) {
            Py_DECREF(cols);
            return NULL;
        }
        PyTuple_SET_ITEM(cols, i, c);
    }
    return Py_BuildValue("LN", (long long)b->n, cols);
}

static void dec_free(dec_t *d)
{
    for (int i = 0; i < d->nbatches; i++)
        batch_free(d->batches[i]);
    free(d->batches);
    batch_free(d->cur);
    free(d->scratch);
    if (d->zs_init)
        inflateEnd(&d->zs);
}

PyDoc_STRVAR(decode_doc,
             "decode(data, offset, sync, deflate, batch_rows=2**21, chain=None, max_block=64 MiB, version=1) -> (batches, error)\n\n"
             "Decode the blocks of a v1 or v2 (`version`: the writer schema's) container file starting at `offset`.\n"
             "chain=(first_seq, prev_hash: bytes): also verify every record's hash and its link\n"
             "(error kind 4, message 'missing:|reordered:|unchained:|altered:...').\n"
             "max_block: what a deflate block may inflate to (more is corrupt data).\n"
             "batches: list of (rows, columns); error: None or (kind, message, record_index) with\n"
             "kind 1 = corrupt data, 2 = out of memory, 3 = beyond this decoder's limits.");

static PyObject *py_decode(PyObject *self, PyObject *args)
{
    Py_buffer data, sync;
    Py_ssize_t offset;
    int deflate;
    long long batch_rows = BATCH_ROW_LIMIT;
    PyObject *chain = Py_None;
    long long max_block = 64LL << 20;
    long long first_seq = 0;
    const char *prev = NULL;
    Py_ssize_t prev_n = 0;
    int version = 1;
    if (!PyArg_ParseTuple(args, "y*ny*p|LOLi", &data, &offset, &sync, &deflate, &batch_rows, &chain, &max_block,
                          &version))
        return NULL;
    if (chain != Py_None && (!PyArg_ParseTuple(chain, "Ly#", &first_seq, &prev, &prev_n) || prev_n > 64)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "chain: prev_hash longer than 64 bytes");
        PyBuffer_Release(&data);
        PyBuffer_Release(&sync);
        return NULL;
    }
    if (batch_rows < 1 || batch_rows > BATCH_ROW_LIMIT)
        batch_rows = BATCH_ROW_LIMIT;
    PyObject *result = NULL;
    if (sync.len != 16 || offset < 0 || offset > data.len) {
        PyErr_SetString(PyExc_ValueError, "bad sync marker length or offset");
        goto out;
    }
    dec_t *d = calloc(1, sizeof *d);
    if (!d) {
        PyErr_NoMemory();
        goto out;
    }
    d->batch_rows = batch_rows;
    d->version = version;
    d->max_block = max_block > 0 && max_block < (1LL << 31) ? max_block : (1LL << 31);
    if (chain != Py_None) {
        d->verify = 1;
        d->next_seq = first_seq;
        memcpy(d->head, prev, (size_t)prev_n);
        d->head_n = (int)prev_n;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = decode_blocks(d, (const uint8_t *)data.buf, (int64_t)data.len, (int64_t)offset,
                       (const uint8_t *)sync.buf, deflate);
    Py_END_ALLOW_THREADS
    PyObject *err = NULL, *list = NULL;
    if (rc) {
        err = Py_BuildValue("isL", rc, d->e.msg, (long long)d->index);
        list = PyList_New(0);
    } else {
        err = Py_NewRef(Py_None);
        list = PyList_New(d->nbatches);
        for (int i = 0; list && i < d->nbatches; i++) {
            PyObject *bt = batch_to_py(d->batches[i]);
            if (!bt) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, bt);
        }
    }
    if (err && list)
        result = Py_BuildValue("NN", list, err);
    else {
        Py_XDECREF(err);
        Py_XDECREF(list);
    }
    dec_free(d);
    free(d);
out:
    PyBuffer_Release(&data);
    PyBuffer_Release(&sync);
    return result;
}

PyDoc_STRVAR(header_doc,
             "read_header(data) -> (metadata: dict[str, bytes], sync: bytes, offset: int)\n\n"
             "Parse an Avro object container header; ValueError if it is not one.");

static PyObject *py_read_header(PyObject *self, PyObject *args)
{
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    PyObject *meta = PyDict_New(), *result = NULL;
    err_t e;
    if (!meta)
        goto out;
    if (setjmp(e.jb)) {
        PyErr_Format(PyExc_ValueError, "%s", e.msg);
        goto out;
    }
    rd_t r = {(const uint8_t *)data.buf, (const uint8_t *)data.buf + data.len, &e};
    if (REMAIN(&r) < 4 || memcmp(r.p, "Obj\x01", 4) != 0)
        fail(&e, E_DATA, "no Avro magic (Obj\\x01) at the start");
    r.p += 4;
    int64_t cnt;
    while ((cnt = rd_block_count(&r)) != 0) {
        for (int64_t i = 0; i < cnt; i++) {
            sv_t k = rd_str(&r);
            sv_t v = rd_bytes(&r);
            PyObject *key = PyUnicode_DecodeUTF8((const char *)k.p, k.n, "strict");
            PyObject *val = key ? PyBytes_FromStringAndSize((const char *)v.p, v.n) : NULL;
            if (!val || PyDict_SetItem(meta, key, val) < 0) {
                Py_XDECREF(key);
                Py_XDECREF(val);
                goto out; /* Python error set */
            }
            Py_DECREF(key);
            Py_DECREF(val);
        }
    }
    if (REMAIN(&r) < 16)
        fail(&e, E_DATA, "header ends before its sync marker");
    result = Py_BuildValue("Oy#n", meta, (const char *)r.p, (Py_ssize_t)16,
                           (Py_ssize_t)(r.p + 16 - (const uint8_t *)data.buf));
out:
    Py_XDECREF(meta);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *str_tuple(const sym_t *syms, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromStringAndSize(syms[i].s, syms[i].n);
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyMethodDef methods[] = {
    {"decode", py_decode, METH_VARARGS, decode_doc},
    {"read_header", py_read_header, METH_VARARGS, header_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "schemas._flatdecode",
    "Native decoder: ControllerEvent v1 container files -> flat Arrow column buffers.", -1, methods,
};

PyMODINIT_FUNC PyInit__flatdecode(void)
{
    if (PyType_Ready(&BufType) < 0)
        return NULL;
    for (int i = 0; i < NCOLS; i++)
        if (COLDEFS[i].kind >= K_STR)
            OFFSET_COLS[i >> 6] |= (uint64_t)1 << (i & 63);
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
#ifdef CTRLAUDIT_CHAIN
    const int chain = 1; /* check_chain is compiled in */
#else
    const int chain = 0;
#endif
    if (PyModule_AddIntConstant(m, "CHAIN", chain) < 0)
        return NULL;
    PyObject *cols = PyTuple_New(NCOLS);
    if (!cols)
        goto err;
    for (int i = 0; i < NCOLS; i++) {
        PyObject *c = Py_BuildValue("(si)", COLDEFS[i].name, COLDEFS[i].kind);
        if (!c) {
            Py_DECREF(cols);
            goto err;
        }
        PyTuple_SET_ITEM(cols, i, c);
    }
    if (PyModule_AddObject(m, "COLUMNS", cols) < 0) {
        Py_DECREF(cols);
        goto err;
    }
    PyObject *sym = Py_BuildValue(
        "{sNsNsNsNsNsNsNsN}", "SourceKind", str_tuple(SOURCE_KIND, N_SOURCE_KIND), "BrokerChangeKind",
        str_tuple(BROKER_CHANGE_KIND, N_BROKER_CHANGE_KIND), "TopicChangeKind",
        str_tuple(TOPIC_CHANGE_KIND, N_TOPIC_CHANGE_KIND), "LeaderRecoveryState", str_tuple(RECOVERY, N_RECOVERY),
        "PartitionChangeKind", str_tuple(PARTITION_CHANGE_KIND, N_PARTITION_CHANGE_KIND), "ElectionType",
        str_tuple(ELECTION, N_ELECTION), "ConfigResourceType", str_tuple(CONFIG_TYPE, N_CONFIG_TYPE), "payload",
        str_tuple(PAYLOAD, N_PAYLOAD));
    if (!sym || PyModule_AddObject(m, "SYMBOLS", sym) < 0) {
        Py_XDECREF(sym);
        goto err;
    }
    if (PyModule_AddIntConstant(m, "K_I32", K_I32) < 0 || PyModule_AddIntConstant(m, "K_I64", K_I64) < 0 ||
        PyModule_AddIntConstant(m, "K_BOOL", K_BOOL) < 0 || PyModule_AddIntConstant(m, "K_STR", K_STR) < 0 ||
        PyModule_AddIntConstant(m, "K_LI32", K_LI32) < 0 || PyModule_AddIntConstant(m, "K_LI64", K_LI64) < 0 ||
        PyModule_AddIntConstant(m, "K_LSTR", K_LSTR) < 0)
        goto err;
    return m;
err:
    Py_DECREF(m);
    return NULL;
}
