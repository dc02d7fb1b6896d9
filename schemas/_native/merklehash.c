/* schemas._merklehash: the two bulk hashings of schemas/archive/merkle.py in one C loop each, for the paths that
 * hash every event as it is made (the capture worker signs its events topic; its budget per event is a few
 * microseconds, and Python's hashlib costs ~0.25 us per call in call overhead alone, twice per leaf).
 * schemas/archive/merkle.py is the only caller and keeps the pure-Python path, which stays the reference:
 * anything these functions do not take exactly as described raises ValueError, and the caller then hashes
 * the Python way, so an odd input gets the Python path's answer or error, never a different one.
 *
 * event_leaf_hashes(hashes): [SHA-256(0x00 || bytes.fromhex(h)) for h in hashes], each h a str of exactly 64
 *   ASCII hex digits (either case, no spaces: what bytes.fromhex reads as 32 bytes without skipping anything).
 * pair_hashes(level): [SHA-256(0x01 || level[i] || level[i + 1]) for i = 0, 2, 4, ...] over a list of 32-byte
 *   bytes objects; an odd last one has no parent.
 *
 * SHA-256 is OpenSSL's (libcrypto), which uses the CPU's SHA instructions where there are some.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <openssl/sha.h>

/* SHA256_Init/Update/Final, not the one-shot SHA256(): in OpenSSL 3 the one-shot fetches the algorithm from the
 * provider on every call, which made it slower than hashlib. */
static void sha256(const unsigned char *data, size_t n, unsigned char *md)
{
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, data, n);
    SHA256_Final(md, &c);
}

/* hex digit -> value, 0xff for anything else (both cases, as bytes.fromhex takes them) */
static unsigned char HEXVAL[256];

static void init_hexval(void)
{
    memset(HEXVAL, 0xff, sizeof HEXVAL);
    for (int i = 0; i < 10; i++)
        HEXVAL['0' + i] = (unsigned char)i;
    for (int i = 0; i < 6; i++)
        HEXVAL['a' + i] = HEXVAL['A' + i] = (unsigned char)(10 + i);
}

static PyObject *not_taken(const char *what)
{
    PyErr_SetString(PyExc_ValueError, what);
    return NULL;
}

/* The 32 bytes that 64 hex digits (either case) spell, into out; 0 when any of them is not a hex digit. */
static inline int unhex32(const unsigned char *x, unsigned char *out)
{
    unsigned char any = 0;
    for (int j = 0; j < SHA256_DIGEST_LENGTH; j++) {
        unsigned char hi = HEXVAL[x[2 * j]], lo = HEXVAL[x[2 * j + 1]];
        any |= hi | lo;
        out[j] = (unsigned char)(hi << 4 | lo);
    }
    return !(any & 0xf0);
}

/* out[i] = SHA-256 of in[0:len], a new 32-byte bytes object; -1 with MemoryError set when it cannot be made. */
static int put_hash(PyObject *out, Py_ssize_t i, const unsigned char *in, size_t len)
{
    PyObject *h = PyBytes_FromStringAndSize(NULL, SHA256_DIGEST_LENGTH);
    if (h == NULL)
        return -1;
    sha256(in, len, (unsigned char *)PyBytes_AS_STRING(h));
    PyList_SET_ITEM(out, i, h);
    return 0;
}

static PyObject *py_event_leaf_hashes(PyObject *self, PyObject *arg)
{
    if (!PyList_Check(arg))
        return not_taken("event_leaf_hashes: a list of str");
    Py_ssize_t n = PyList_GET_SIZE(arg);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    unsigned char in[1 + SHA256_DIGEST_LENGTH];
    in[0] = 0x00;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(arg, i);
        if (!PyUnicode_Check(h) || PyUnicode_KIND(h) != PyUnicode_1BYTE_KIND
                || PyUnicode_GET_LENGTH(h) != 2 * SHA256_DIGEST_LENGTH) {
            Py_DECREF(out);
            return not_taken("event_leaf_hashes: not 64 hex digits");
        }
        if (!unhex32(PyUnicode_1BYTE_DATA(h), in + 1)) {
            Py_DECREF(out);
            return not_taken("event_leaf_hashes: not 64 hex digits");
        }
        if (put_hash(out, i, in, sizeof in) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *py_pair_hashes(PyObject *self, PyObject *arg)
{
    if (!PyList_Check(arg))
        return not_taken("pair_hashes: a list of bytes");
    Py_ssize_t n = PyList_GET_SIZE(arg) / 2;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    unsigned char in[1 + 2 * SHA256_DIGEST_LENGTH];
    in[0] = 0x01;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *left = PyList_GET_ITEM(arg, 2 * i), *right = PyList_GET_ITEM(arg, 2 * i + 1);
        if (!PyBytes_CheckExact(left) || !PyBytes_CheckExact(right) || PyBytes_GET_SIZE(left) != SHA256_DIGEST_LENGTH
                || PyBytes_GET_SIZE(right) != SHA256_DIGEST_LENGTH) {
            Py_DECREF(out);
            return not_taken("pair_hashes: not 32-byte hashes");
        }
        memcpy(in + 1, PyBytes_AS_STRING(left), SHA256_DIGEST_LENGTH);
        memcpy(in + 1 + SHA256_DIGEST_LENGTH, PyBytes_AS_STRING(right), SHA256_DIGEST_LENGTH);
        if (put_hash(out, i, in, sizeof in) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* The packed forms, for a reader checking a signed archive: n events' hex chain hashes back to back (as an Arrow
 * string column holds them) -> their leaves, and a level -> its parents, 32 bytes per hash, hashed with the GIL
 * released so that the check runs beside the decoding threads. */
static PyObject *packed_start(PyObject *args, Py_buffer *in, const char *not_whole)
{
    /* the packed forms' common start: the one buffer argument, a whole number of 64-byte items (else ValueError
     * `not_whole`), and the output of 32 bytes an item; NULL with the exception set and nothing held on failure */
    if (!PyArg_ParseTuple(args, "y*", in))
        return NULL;
    if (in->len % 64) {
        PyBuffer_Release(in);
        PyErr_SetString(PyExc_ValueError, not_whole);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, in->len / 64 * 32);
    if (!out)
        PyBuffer_Release(in);
    return out;
}

static PyObject *py_merkle_leaves(PyObject *self, PyObject *args)
{
    Py_buffer in;
    PyObject *out = packed_start(args, &in, "event hashes: not a whole number of 64 hex digits");
    if (!out)
        return NULL;
    Py_ssize_t n = in.len / 64, bad = -1;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    const unsigned char *h = (const unsigned char *)in.buf;
    Py_BEGIN_ALLOW_THREADS
    unsigned char leaf[33];
    leaf[0] = 0x00;
    for (Py_ssize_t i = 0; i < n && bad < 0; i++) {
        if (unhex32(h + i * 64, leaf + 1))
            sha256(leaf, sizeof leaf, o + i * 32);
        else
            bad = i;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    if (bad >= 0) {
        Py_DECREF(out);
        PyErr_Format(PyExc_ValueError, "event hash %zd: not hex", bad);
        return NULL;
    }
    return out;
}

static PyObject *py_merkle_parents(PyObject *self, PyObject *args)
{
    Py_buffer in;
    PyObject *out = packed_start(args, &in, "a level to pair: not a whole number of pairs of 32-byte hashes");
    if (!out)
        return NULL;
    Py_ssize_t n = in.len / 64;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    const unsigned char *h = (const unsigned char *)in.buf;
    Py_BEGIN_ALLOW_THREADS
    unsigned char node[65];
    node[0] = 0x01;
    for (Py_ssize_t i = 0; i < n; i++) {
        memcpy(node + 1, h + i * 64, 64);
        sha256(node, sizeof node, o + i * 32);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return out;
}

static PyMethodDef methods[] = {
    {"merkle_leaves", py_merkle_leaves, METH_VARARGS, "SHA-256(0x00 || raw) of each 64-hex-digit hash, packed."},
    {"merkle_parents", py_merkle_parents, METH_VARARGS, "SHA-256(0x01 || left || right) of each pair, packed."},
    {"event_leaf_hashes", py_event_leaf_hashes, METH_O, "Leaf hashes of hex chain hashes (see the file's comment)."},
    {"pair_hashes", py_pair_hashes, METH_O, "Parents of a level's 32-byte hashes taken in pairs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "schemas._merklehash",
    "RFC 9162 leaf and node hashes in bulk (the fast path of schemas/archive/merkle.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__merklehash(void)
{
    init_hexval();
    return PyModule_Create(&moduledef);
}
