/* schemas._fastbuild: build the model's frozen, slotted dataclasses column-wise, for the paths that
 * make them by the hundred thousand (the store's as-of objects). schemas/fastbuild.py is the only
 * caller and keeps the pure-Python path, which stays the reference.
 *
 * objects(cls, columns, untrack=False): [cls(*row) for row in zip(*columns)], each field stored
 *   straight into its slot (the offset of the class's member descriptor), as object.__setattr__ would
 *   store it: the objects are equal to __init__'s. The class must be slotted and every field a slot
 *   (checked by the caller); the columns must be lists of one length. untrack: leave the objects out
 *   of the cyclic GC, for values that cannot reach back to them (ints, strings, tuples of ints, enum
 *   members, other such objects): the collector's next pass would otherwise walk all of them.
 * int_tuples(offsets, values, start, count): the rows start..start+count of an Arrow list<int32>
 *   column as tuples of ints, from its offsets buffer (int32) and its values buffer (int32), each row
 *   the values between its two offsets, as the Python path slices them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *py_objects(PyObject *self, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *columns;
    int untrack = 0;
    if (!PyArg_ParseTuple(args, "O!O!|p", &PyType_Type, &cls, &PyList_Type, &columns, &untrack))
        return NULL;
    Py_ssize_t nfields = PyList_GET_SIZE(columns);
    PyObject *slots = PyObject_GetAttrString((PyObject *)cls, "__slots__");
    if (slots == NULL)
        return NULL;
    if (!PyTuple_Check(slots) || PyTuple_GET_SIZE(slots) != nfields) {
        Py_DECREF(slots);
        PyErr_SetString(PyExc_TypeError, "objects: one column per slot of the class, in __slots__ order");
        return NULL;
    }
    Py_ssize_t *offsets = PyMem_Malloc(sizeof(Py_ssize_t) * (nfields ? nfields : 1));
    if (offsets == NULL) {
        Py_DECREF(slots);
        return PyErr_NoMemory();
    }
    Py_ssize_t rows = -1;
    for (Py_ssize_t f = 0; f < nfields; f++) {
        PyObject *col = PyList_GET_ITEM(columns, f);
        PyObject *descr = PyDict_GetItemWithError(cls->tp_dict, PyTuple_GET_ITEM(slots, f));
        if (!PyList_Check(col) || descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
                || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX
                || (rows >= 0 && PyList_GET_SIZE(col) != rows)) {
            PyMem_Free(offsets);
            Py_DECREF(slots);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "objects: a column that is not a list of the others' length, "
                                                 "or a field that is not a slot of the class");
            return NULL;
        }
        offsets[f] = ((PyMemberDescrObject *)descr)->d_member->offset;
        rows = PyList_GET_SIZE(col);
    }
    Py_DECREF(slots);
    if (rows < 0)
        rows = 0;
    PyObject *out = PyList_New(rows);
    if (out == NULL) {
        PyMem_Free(offsets);
        return NULL;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        PyObject *o = cls->tp_alloc(cls, 0);
        if (o == NULL) {
            PyMem_Free(offsets);
            Py_DECREF(out);
            return NULL;
        }
        for (Py_ssize_t f = 0; f < nfields; f++) {
            PyObject *v = PyList_GET_ITEM(PyList_GET_ITEM(columns, f), r);
            Py_INCREF(v);
            *(PyObject **)((char *)o + offsets[f]) = v;
        }
        if (untrack && PyObject_IS_GC(o))
            PyObject_GC_UnTrack(o);
        PyList_SET_ITEM(out, r, o);
    }
    PyMem_Free(offsets);
    return out;
}

static PyObject *py_int_tuples(PyObject *self, PyObject *args)
{
    Py_buffer off, val;
    Py_ssize_t start, count;
    if (!PyArg_ParseTuple(args, "y*y*nn", &off, &val, &start, &count))
        return NULL;
    PyObject *out = NULL;
    const int32_t *o = (const int32_t *)off.buf, *v = (const int32_t *)val.buf;
    Py_ssize_t noff = off.len / (Py_ssize_t)sizeof(int32_t), nval = val.len / (Py_ssize_t)sizeof(int32_t);
    if (start < 0 || count < 0 || start + count + 1 > noff) {
        PyErr_SetString(PyExc_ValueError, "int_tuples: rows beyond the offsets buffer");
        goto done;
    }
    out = PyList_New(count);
    for (Py_ssize_t r = 0; out != NULL && r < count; r++) {
        int32_t a = o[start + r], b = o[start + r + 1];
        if (a < 0 || b < a || b > nval) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_ValueError, "int_tuples: an offset beyond the values buffer");
            break;
        }
        PyObject *t = PyTuple_New(b - a);
        for (int32_t i = a; t != NULL && i < b; i++) {
            PyObject *n = PyLong_FromLong(v[i]);  /* small ints (broker ids) are shared, not allocated */
            if (n == NULL)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i - a, n);
        }
        if (t == NULL) {
            Py_CLEAR(out);
        } else {
            PyObject_GC_UnTrack(t); /* ints only: no cycle through it (CPython untracks such tuples too, later) */
            PyList_SET_ITEM(out, r, t);
        }
    }
done:
    PyBuffer_Release(&off);
    PyBuffer_Release(&val);
    return out;
}

static PyMethodDef methods[] = {
    {"objects", py_objects, METH_VARARGS,
     "objects(cls, columns, untrack=False): cls(*row) for each row, slot by slot"},
    {"int_tuples", py_int_tuples, METH_VARARGS,
     "int_tuples(offsets, values, start, count): rows of an Arrow list<int32> column as tuples"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "schemas._fastbuild",
    "Column-wise construction of slotted dataclasses and int tuples (schemas/fastbuild.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastbuild(void)
{
    return PyModule_Create(&moduledef);
}
