/* stack_groups(frame_lists) -> (ids: bytearray of int64, representatives: list)
 *
 * Groups a snapshot's per-row frames lists by what they hold: two lists are in one group when they hold
 * the same objects (the same frame dicts, compared by identity: torch shares each frame dict between
 * every stack that holds it). ids[i] is row i's group (0, 1, ... in order of first appearance), or -1 when
 * the row's value is not a list or is an empty list; representatives[g] is the first list of group g.
 *
 * Included by core/trace/_scan.c. Replaces, for core/snapshot/intern.py, building a tuple of the ids
 * of every distinct list's 30-80 frame dicts (96 M int objects and tuple hashes for a 1 GB snapshot:
 * ~18 CPU s of its 34). Nothing here calls back into Python: items are compared by pointer (no __eq__ or
 * __hash__ runs), the GIL is held throughout so no list changes under the walk, and every distinct
 * list object is hashed once (a pointer table first), so a list shared by every row costs its length
 * once, not once per row.
 */

typedef struct {
    PyObject *key; /* the list object (by pointer) or, in the content table, the group's first list */
    Py_ssize_t group;
    uint64_t hash;
} SKSlot;

typedef struct {
    SKSlot *slots;
    size_t cap, used; /* cap: a power of two */
} SKTable;

static uint64_t sk_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static int sk_grow(SKTable *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    SKSlot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].key) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].key) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

static uint64_t sk_content_hash(PyListObject *l) {
    Py_ssize_t n = PyList_GET_SIZE(l);
    uint64_t h = sk_mix((uint64_t)n + 0x9e3779b97f4a7c15ULL);
    for (Py_ssize_t i = 0; i < n; i++) h = sk_mix(h ^ (uint64_t)(uintptr_t)l->ob_item[i]) + (uint64_t)i;
    return h ? h : 1;
}

static int sk_same(PyListObject *a, PyListObject *b) {
    Py_ssize_t n = PyList_GET_SIZE(a);
    return n == PyList_GET_SIZE(b) && memcmp(a->ob_item, b->ob_item, (size_t)n * sizeof(PyObject *)) == 0;
}

static PyObject *stack_groups(PyObject *self, PyObject *args) {
    PyObject *rows;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &rows)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *ids = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *reps = PyList_New(0);
    SKTable by_ptr = {0}, by_content = {0};
    if (!ids || !reps) goto fail;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(ids);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(v) || PyList_GET_SIZE(v) == 0) {
            out[i] = -1;
            continue;
        }
        /* 1: this list object seen before? */
        if ((by_ptr.used + 1) * 2 > by_ptr.cap && sk_grow(&by_ptr) < 0) goto nomem;
        uint64_t hp = sk_mix((uint64_t)(uintptr_t)v);
        size_t j = hp & (by_ptr.cap - 1);
        while (by_ptr.slots[j].key && by_ptr.slots[j].key != v) j = (j + 1) & (by_ptr.cap - 1);
        if (by_ptr.slots[j].key) {
            out[i] = by_ptr.slots[j].group;
            continue;
        }
        /* 2: a list holding the same objects seen before? */
        if ((by_content.used + 1) * 2 > by_content.cap && sk_grow(&by_content) < 0) goto nomem;
        uint64_t hc = sk_content_hash((PyListObject *)v);
        size_t k = hc & (by_content.cap - 1);
        while (by_content.slots[k].key &&
               !(by_content.slots[k].hash == hc &&
                 sk_same((PyListObject *)by_content.slots[k].key, (PyListObject *)v)))
            k = (k + 1) & (by_content.cap - 1);
        Py_ssize_t g;
        if (by_content.slots[k].key) {
            g = by_content.slots[k].group;
        } else {
            g = PyList_GET_SIZE(reps);
            if (PyList_Append(reps, v) < 0) goto fail;
            by_content.slots[k] = (SKSlot){v, g, hc};
            by_content.used++;
        }
        by_ptr.slots[j] = (SKSlot){v, g, hp};
        by_ptr.used++;
        out[i] = g;
    }
    free(by_ptr.slots);
    free(by_content.slots);
    PyObject *res = PyTuple_Pack(2, ids, reps);
    Py_DECREF(ids);
    Py_DECREF(reps);
    return res;
nomem:
    PyErr_NoMemory();
fail:
    free(by_ptr.slots);
    free(by_content.slots);
    Py_XDECREF(ids);
    Py_XDECREF(reps);
    return NULL;
}
