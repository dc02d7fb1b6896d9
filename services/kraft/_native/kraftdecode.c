/*
 * services.kraft._kraftdecode: the records of one (decompressed) KRaft data batch straight into
 * MetadataRecord objects, the same objects services/kraft/records.py:decode_data_batch builds.
 *
 * The record framing (DefaultRecord) and the value frame (frameVersion, apiKey, version) are
 * read here; the message body is read by a small interpreter over field tables that
 * services/kraft/native.py derives from messages.CATALOGUE, so the schemas stay in specs.json and
 * nothing here knows a message by name. The Python path stays the reference and decides every
 * error: whenever anything is not exactly what this code knows how to read (a bound, a varint
 * longer than allowed, a null value, an unknown apiKey/version or tag, invalid UTF-8, bytes left
 * over), decode_records returns None and the caller decodes the whole batch the Python way,
 * which raises or keeps an UnknownRecord with its usual message. So there is no second set of
 * error messages, and a batch decodes to the same records whichever path took it.
 *
 * Convention inside: a function returning NULL without a Python exception set means "not for
 * this path" (bail); NULL with an exception set (MemoryError) is a real error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* field kinds; native.py uses the same numbers (exported as K_*) */
enum { K_BOOL = 1, K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64, K_UUID,
       K_STRING, K_BYTES, K_STRUCT, K_ARRAY };

#define MAX_FIELDS 32
#define MAX_API_KEY 128
#define MAX_VERSION 32

typedef struct msg msg_t;
typedef struct {
    PyObject *key;     /* JSON name (interned str) */
    int kind, elem;    /* elem: kind of an array's elements */
    int nullable, tag; /* tag -1: not tagged */
    PyObject *dflt;    /* a tagged field's value when absent */
    int dflt_list;     /* ...or a new empty list each time */
    msg_t *sub;        /* struct / array of struct */
} field_t;

struct msg {
    int n;
    field_t f[MAX_FIELDS];
};

typedef struct {
    msg_t *msg;
    PyObject *mv;
} entry_t;

static entry_t TABLE[MAX_API_KEY][MAX_VERSION];
static PyTypeObject *RECORD_TYPE;
static PyObject *SLOT[5]; /* member descriptors: offset, timestamp, batch, mv, data */
static PyObject *UUID_CACHE, *UUID_STR;

typedef struct {
    const uint8_t *p, *end;
} rd_t;

#define BAIL NULL

static inline int uvarint(rd_t *r, uint64_t *out, int max_bytes)
{
    uint64_t v = 0;
    for (int i = 0, shift = 0; i < max_bytes; i++, shift += 7) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline int zigzag(rd_t *r, int64_t *out, int max_bytes)
{
    uint64_t u;
    if (uvarint(r, &u, max_bytes))
        return -1;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

static inline uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* UNTRACKED: the records, their dicts and lists are left out of the cyclic GC. They hold only ints,
 * strings, their own dicts and lists, and the batch (which holds none of them), so they cannot form a
 * cycle; tracked, the collector walked the growing heap of them every 700 allocations, about a quarter
 * of a real log's decode time (perf, 434k records of a real 4.3 cluster). CPython untracks dicts of
 * atomic values itself for the same reason. Untracked objects are still freed by reference count; an
 * object they refer to stays alive while they do, as with any external reference. */

/* UUIDs seen lately, by their 16 bytes: a log repeats a handful (topic ids, one directory id per
 * log dir), and the lookup below costs a bytes object and a dict probe per UUID, ~4 per partition
 * change. Direct-mapped, so bounded; a string is a pure function of its bytes, so never stale. */
#define UUID_SLOTS 1024
static struct {
    uint8_t raw[16];
    PyObject *s;
} UUIDS[UUID_SLOTS];

static PyObject *uuid_obj(const uint8_t *p)
{
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    size_t slot = (size_t)(((a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL) >> 54) & (UUID_SLOTS - 1);
    if (UUIDS[slot].s && memcmp(UUIDS[slot].raw, p, 16) == 0)
        return Py_NewRef(UUIDS[slot].s);
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, 16);
    if (!raw)
        return NULL;
    PyObject *s = PyDict_GetItemWithError(UUID_CACHE, raw);
    if (s)
        Py_INCREF(s);
    else if (!PyErr_Occurred())
        s = PyObject_CallOneArg(UUID_STR, raw); /* wire.uuid_str, which also fills the cache */
    Py_DECREF(raw);
    if (s && PyUnicode_CheckExact(s)) {
        Py_XSETREF(UUIDS[slot].s, Py_NewRef(s));
        memcpy(UUIDS[slot].raw, p, 16);
    }
    return s;
}

/* A fixed-width scalar at p (bounds already checked). */
static PyObject *fixed(int kind, const uint8_t *p)
{
    switch (kind) {
    case K_BOOL: return Py_NewRef(*p ? Py_True : Py_False);
    case K_INT8: return PyLong_FromLong((int8_t)*p);
    case K_INT16: return PyLong_FromLong((int16_t)be(p, 2));
    case K_UINT16: return PyLong_FromLong((long)be(p, 2));
    case K_INT32: return PyLong_FromLong((int32_t)be(p, 4));
    case K_UINT32: return PyLong_FromUnsignedLong((unsigned long)be(p, 4));
    case K_INT64: return PyLong_FromLongLong((int64_t)be(p, 8));
    case K_FLOAT64: {
        uint64_t u = be(p, 8);
        double d;
        memcpy(&d, &u, 8);
        return PyFloat_FromDouble(d);
    }
    case K_UUID: return uuid_obj(p);
    }
    return BAIL;
}

static const int WIDTH[] = {[K_BOOL] = 1, [K_INT8] = 1, [K_INT16] = 2, [K_UINT16] = 2, [K_INT32] = 4,
                            [K_UINT32] = 4, [K_INT64] = 8, [K_FLOAT64] = 8, [K_UUID] = 16};

static PyObject *decode_msg(const msg_t *m, rd_t *r);

/* string / bytes: uvarint length + 1 (0 = null) */
static PyObject *text(rd_t *r, int kind, int nullable)
{
    uint64_t n;
    if (uvarint(r, &n, 5))
        return BAIL;
    if (n == 0)
        return nullable ? Py_NewRef(Py_None) : BAIL;
    n -= 1;
    if (n > (uint64_t)(r->end - r->p))
        return BAIL;
    const char *s = (const char *)r->p;
    r->p += n;
    if (kind == K_BYTES)
        return PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    PyObject *u = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, NULL);
    if (!u && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear(); /* the Python path reports it */
    return u;
}

static PyObject *array(rd_t *r, const field_t *f)
{
    uint64_t cnt;
    if (uvarint(r, &cnt, 5))
        return BAIL;
    if (cnt == 0)
        return f->nullable ? Py_NewRef(Py_None) : BAIL;
    cnt -= 1;
    if (cnt > (uint64_t)(r->end - r->p)) /* every element takes at least one byte */
        return BAIL;
    int w = f->elem <= K_UUID ? WIDTH[f->elem] : 0;
    if (w && cnt * (uint64_t)w > (uint64_t)(r->end - r->p))
        return BAIL;
    PyObject *list = PyList_New((Py_ssize_t)cnt);
    if (!list)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)cnt; i++) {
        PyObject *v;
        if (w) {
            v = fixed(f->elem, r->p);
            r->p += w;
        } else if (f->elem == K_STRING || f->elem == K_BYTES) {
            v = text(r, f->elem, 0); /* a null element is an error in Kafka too */
        } else if (f->elem == K_STRUCT) {
            v = decode_msg(f->sub, r);
        } else {
            v = BAIL;
        }
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
    }
    PyObject_GC_UnTrack(list); /* see UNTRACKED */
    return list;
}

static PyObject *field(rd_t *r, const field_t *f)
{
    switch (f->kind) {
    case K_STRING:
    case K_BYTES: return text(r, f->kind, f->nullable);
    case K_ARRAY: return array(r, f);
    case K_STRUCT:
        if (f->nullable) {
            if (r->p >= r->end)
                return BAIL;
            if (*r->p++ == 0xFF)
                return Py_NewRef(Py_None);
        }
        return decode_msg(f->sub, r);
    default: {
        int w = WIDTH[f->kind];
        if (r->end - r->p < w)
            return BAIL;
        PyObject *v = fixed(f->kind, r->p);
        r->p += w;
        return v;
    }
    }
}

/* One message (or struct): its fields in declaration order, then the tag section. */
static PyObject *decode_msg(const msg_t *m, rd_t *r)
{
    PyObject *vals[MAX_FIELDS] = {0};
    PyObject *d = NULL;
    int i;
    for (i = 0; i < m->n; i++)
        if (m->f[i].tag < 0 && !(vals[i] = field(r, &m->f[i])))
            goto done;
    uint64_t ntag;
    if (uvarint(r, &ntag, 5))
        goto done;
    for (uint64_t t = 0; t < ntag; t++) {
        uint64_t tag, sz;
        if (uvarint(r, &tag, 5) || uvarint(r, &sz, 5) || sz > (uint64_t)(r->end - r->p))
            goto done;
        const uint8_t *tend = r->p + sz;
        for (i = 0; i < m->n && m->f[i].tag != (int64_t)tag; i++)
            ;
        if (i == m->n) /* unknown, or not valid for this version: the Python path judges */
            goto done;
        Py_CLEAR(vals[i]);
        if (!(vals[i] = field(r, &m->f[i])) || r->p != tend)
            goto done;
    }
    for (i = 0; i < m->n; i++)
        if (!vals[i] && !(vals[i] = m->f[i].dflt_list ? PyList_New(0) : Py_NewRef(m->f[i].dflt)))
            goto done;
    if (!(d = _PyDict_NewPresized(m->n))) /* no resize on the way: a partition change has ~12 fields */
        goto done;
    for (i = 0; i < m->n; i++)
        if (PyDict_SetItem(d, m->f[i].key, vals[i]) < 0) {
            Py_CLEAR(d);
            break;
        }
done:
    for (i = 0; i < m->n; i++)
        Py_XDECREF(vals[i]);
    if (d)
        PyObject_GC_UnTrack(d); /* see UNTRACKED */
    return d;
}

/* ---- tables from native.py --------------------------------------------------------------- */

static msg_t *build_msg(PyObject *spec);

static int build_field(field_t *f, PyObject *t)
{
    PyObject *key, *dflt, *sub;
    if (!PyArg_ParseTuple(t, "UiiiiOiO", &key, &f->kind, &f->elem, &f->nullable, &f->tag, &dflt,
                          &f->dflt_list, &sub))
        return -1;
    if (f->kind < K_BOOL || f->kind > K_ARRAY || f->elem < 0 || f->elem > K_STRUCT) {
        PyErr_SetString(PyExc_ValueError, "unknown field kind");
        return -1;
    }
    Py_INCREF(key);
    PyUnicode_InternInPlace(&key);
    f->key = key;
    f->dflt = Py_NewRef(dflt);
    f->sub = NULL;
    if (sub != Py_None && !(f->sub = build_msg(sub)))
        return -1;
    return 0;
}

static msg_t *build_msg(PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "a message spec is a tuple of at most 32 fields");
        return NULL;
    }
    msg_t *m = PyMem_Calloc(1, sizeof(msg_t)); /* kept for the life of the process */
    if (!m)
        return (msg_t *)PyErr_NoMemory();
    m->n = (int)PyTuple_GET_SIZE(spec);
    for (int i = 0; i < m->n; i++)
        if (build_field(&m->f[i], PyTuple_GET_ITEM(spec, i)) < 0)
            return NULL;
    return m;
}

static PyObject *py_register(PyObject *self, PyObject *args)
{
    int api_key, version;
    PyObject *mv, *spec;
    if (!PyArg_ParseTuple(args, "iiOO", &api_key, &version, &mv, &spec))
        return NULL;
    if (api_key < 0 || api_key >= MAX_API_KEY || version < 0 || version >= MAX_VERSION)
        Py_RETURN_FALSE; /* left to the Python path */
    msg_t *m = build_msg(spec);
    if (!m)
        return NULL;
    TABLE[api_key][version].msg = m;
    Py_XSETREF(TABLE[api_key][version].mv, Py_NewRef(mv));
    Py_RETURN_TRUE;
}

static PyObject *py_init(PyObject *self, PyObject *args)
{
    PyObject *type, *slots, *cache, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O!O", &PyType_Type, &type, &PyTuple_Type, &slots, &PyDict_Type,
                          &cache, &fn))
        return NULL;
    if (PyTuple_GET_SIZE(slots) != 5) {
        PyErr_SetString(PyExc_ValueError, "five slot descriptors expected");
        return NULL;
    }
    for (int i = 0; i < 5; i++) {
        PyObject *s = PyTuple_GET_ITEM(slots, i);
        if (!Py_TYPE(s)->tp_descr_set) {
            PyErr_SetString(PyExc_TypeError, "slot descriptor without __set__");
            return NULL;
        }
        Py_XSETREF(SLOT[i], Py_NewRef(s));
    }
    Py_XSETREF(RECORD_TYPE, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(UUID_CACHE, Py_NewRef(cache));
    Py_XSETREF(UUID_STR, Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* ---- records ----------------------------------------------------------------------------- */

static int set_slot(PyObject *o, int i, PyObject *v) /* steals v */
{
    if (!v)
        return -1;
    int rc = Py_TYPE(SLOT[i])->tp_descr_set(SLOT[i], o, v);
    Py_DECREF(v);
    return rc;
}

/* One value: frame (uvarint frameVersion 1, apiKey, version), then the message, nothing after. */
static PyObject *value(rd_t *r, PyObject **mv)
{
    uint64_t frame, api_key, version;
    if (uvarint(r, &frame, 5) || frame != 1 || uvarint(r, &api_key, 5) || uvarint(r, &version, 5) ||
        api_key >= MAX_API_KEY || version >= MAX_VERSION)
        return BAIL;
    entry_t *e = &TABLE[api_key][version];
    if (!e->msg)
        return BAIL;
    PyObject *d = decode_msg(e->msg, r);
    if (d && r->p != r->end) {
        Py_DECREF(d);
        return BAIL;
    }
    *mv = e->mv;
    return d;
}

/* DefaultRecord: varint length, attributes, varlong timestampDelta, varint offsetDelta,
 * key, value, headers. */
static PyObject *decode_batch(const uint8_t *p, const uint8_t *end, long long count,
                              long long base_offset, long long base_ts, PyObject *batch)
{
    if (count < 0 || count > end - p)
        return BAIL;
    PyObject *out = PyList_New((Py_ssize_t)count);
    if (!out)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        rd_t r = {p, end};
        int64_t length, tsd, offd, klen, vlen, nh;
        if (zigzag(&r, &length, 5) || length < 0 || length > end - r.p)
            goto bail;
        const uint8_t *rec_end = r.p + length;
        r.end = rec_end;
        if (r.p >= r.end)
            goto bail;
        r.p++; /* attributes, unused */
        if (zigzag(&r, &tsd, 10) || zigzag(&r, &offd, 5) || zigzag(&r, &klen, 5))
            goto bail;
        if (klen > 0) {
            if (klen > r.end - r.p)
                goto bail;
            r.p += klen;
        }
        if (zigzag(&r, &vlen, 5) || vlen < 0 || vlen > r.end - r.p)
            goto bail;
        rd_t v = {r.p, r.p + vlen};
        r.p += vlen;
        if (zigzag(&r, &nh, 5) || nh < 0)
            goto bail;
        for (int64_t h = 0; h < nh; h++) {
            int64_t hk, hv;
            if (zigzag(&r, &hk, 5) || hk < 0 || hk > r.end - r.p)
                goto bail;
            r.p += hk;
            if (zigzag(&r, &hv, 5) || hv > r.end - r.p)
                goto bail;
            if (hv > 0)
                r.p += hv;
        }
        if (r.p != rec_end)
            goto bail;
        PyObject *mv = NULL;
        PyObject *data = value(&v, &mv);
        if (!data)
            goto bail;
        PyObject *rec = RECORD_TYPE->tp_alloc(RECORD_TYPE, 0);
        if (!rec || set_slot(rec, 0, PyLong_FromLongLong(base_offset + offd)) < 0 ||
            set_slot(rec, 1, PyLong_FromLongLong(base_ts + tsd)) < 0 ||
            set_slot(rec, 2, Py_NewRef(batch)) < 0 || set_slot(rec, 3, Py_NewRef(mv)) < 0 ||
            set_slot(rec, 4, data) < 0) {
            Py_XDECREF(rec);
            goto bail;
        }
        PyObject_GC_UnTrack(rec); /* see UNTRACKED */
        PyList_SET_ITEM(out, i, rec);
        p = rec_end;
    }
    if (p != end)
        goto bail;
    return out;
bail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *py_decode_records(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t start, end;
    long long count, base_offset, base_ts;
    PyObject *batch;
    if (!RECORD_TYPE) {
        PyErr_SetString(PyExc_RuntimeError, "init() first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nnLLLO", &buf, &start, &end, &count, &base_offset, &base_ts,
                          &batch))
        return NULL;
    PyObject *out = NULL;
    if (start >= 0 && start <= end && end <= buf.len)
        out = decode_batch((const uint8_t *)buf.buf + start, (const uint8_t *)buf.buf + end, count,
                           base_offset, base_ts, batch);
    PyBuffer_Release(&buf);
    if (!out && !PyErr_Occurred())
        Py_RETURN_NONE;
    return out;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS,
     "init(record_type, (offset, timestamp, batch, mv, data) slot descriptors, uuid_cache, uuid_str)"},
    {"register", py_register, METH_VARARGS,
     "register(api_key, version, mv, spec) -> whether this path will decode that message version"},
    {"decode_records", py_decode_records, METH_VARARGS,
     "decode_records(buf, start, end, count, base_offset, base_timestamp, batch) -> list of records, "
     "or None: decode this batch the Python way"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "services.kraft._kraftdecode", NULL, -1,
                                       methods};

PyMODINIT_FUNC PyInit__kraftdecode(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    static const struct {
        const char *name;
        int v;
    } kinds[] = {{"K_BOOL", K_BOOL},     {"K_INT8", K_INT8},       {"K_INT16", K_INT16},
                 {"K_UINT16", K_UINT16}, {"K_INT32", K_INT32},     {"K_UINT32", K_UINT32},
                 {"K_INT64", K_INT64},   {"K_FLOAT64", K_FLOAT64}, {"K_UUID", K_UUID},
                 {"K_STRING", K_STRING}, {"K_BYTES", K_BYTES},     {"K_STRUCT", K_STRUCT},
                 {"K_ARRAY", K_ARRAY}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (PyModule_AddIntConstant(m, kinds[i].name, kinds[i].v) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    return m;
}
