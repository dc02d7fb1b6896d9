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

static int hexval(Py_UCS1 c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static PyObject *not_taken(const char *what)
{
    PyErr_SetString(PyExc_ValueError, what);
    return NULL;
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
        const Py_UCS1 *s = PyUnicode_1BYTE_DATA(h);
        for (int j = 0; j < SHA256_DIGEST_LENGTH; j++) {
            int hi = hexval(s[2 * j]), lo = hexval(s[2 * j + 1]);
            if (hi < 0 || lo < 0) {
                Py_DECREF(out);
                return not_taken("event_leaf_hashes: not 64 hex digits");
            }
            in[1 + j] = (unsigned char)(hi << 4 | lo);
        }
        PyObject *leaf = PyBytes_FromStringAndSize(NULL, SHA256_DIGEST_LENGTH);
        if (leaf == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        sha256(in, sizeof in, (unsigned char *)PyBytes_AS_STRING(leaf));
        PyList_SET_ITEM(out, i, leaf);
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
        PyObject *node = PyBytes_FromStringAndSize(NULL, SHA256_DIGEST_LENGTH);
        if (node == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        sha256(in, sizeof in, (unsigned char *)PyBytes_AS_STRING(node));
        PyList_SET_ITEM(out, i, node);
    }
    return out;
}

static PyMethodDef methods[] = {
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
    return PyModule_Create(&moduledef);
}
