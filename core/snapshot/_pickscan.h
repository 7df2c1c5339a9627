/* pickle_bounds(buf, max_objects, max_depth, max_stack, max_int_bytes, max_text_arg): what a snapshot
 * pickle may cost, in one pass over its opcodes, before the C unpickler builds anything.
 *
 * Included by core/trace/_scan.c (one extension module, built by one command); the Python twin of
 * this walk is core/snapshot/bounds.py `_scan_python` (used when the extension is not built), and
 * tests/core/snapshot/test_bounds.py runs every case through both.
 *
 * The walk keeps the unpickler's stack as a depth per slot (a scalar 0, a container 1 + its deepest
 * item) and its mark stack, without creating an object. It refuses, with a one-line reason:
 *   - more than max_objects objects created;
 *   - a memo index (PUT / BINPUT / LONG_BINPUT) beyond the objects created so far (the pickler numbers
 *     its memo 0, 1, 2, ... as it goes; the C unpickler sizes its memo table by the index), a PUT or
 *     GET index written with more than max_text_arg characters (leading zeros or spaces), or more memo
 *     stores (MEMOIZE / PUT) than objects created (the pickler memoises an object once);
 *   - nesting deeper than max_depth (through the stack, MARK, TUPLE1..3) or more than max_stack items
 *     on the stack at once;
 *   - an integer wider than max_int_bytes bytes (LONG1 / LONG4) or written with more than
 *     max_text_arg characters (INT / LONG text): a snapshot's numbers are 64-bit.
 * It stops (returns) at STOP, at the end of the data, at a truncated argument and at any opcode that is
 * not plain data (a global, a call, an instance, persistent ids, buffers): the restricted unpickler raises
 * there with its own one-line reason, so nothing after it ever runs.
 * Returns None when within bounds, else the reason (str). Runs without the GIL.
 */

typedef struct {
    Py_ssize_t n_objects, memo_stores, max_objects, max_stack, max_depth, max_int_bytes, max_text_arg;
    unsigned short *depth;  /* per stack slot */
    Py_ssize_t *marks;      /* stack height at each MARK */
    Py_ssize_t height, n_marks, cap;
    char reason[200];
} PickScan;

#define PS_INDEX_CAP 1000000000000000000ULL /* a PUT index is read up to this (both walks saturate) */
#define PS_FAIL(...) do { snprintf(ps->reason, sizeof ps->reason, __VA_ARGS__); return -1; } while (0)

static int ps_push(PickScan *ps, unsigned depth) {
    if (ps->height >= ps->max_stack)
        PS_FAIL("pickle keeps more than %zd items on its stack at once (not a real snapshot)", ps->max_stack);
    if (ps->height >= ps->cap) {
        Py_ssize_t cap = ps->cap ? ps->cap * 2 : 4096;
        if (cap > ps->max_stack) cap = ps->max_stack;
        unsigned short *d = realloc(ps->depth, (size_t)cap * sizeof *d);
        if (!d) PS_FAIL("out of memory while checking the pickle");
        ps->depth = d;
        ps->cap = cap;
    }
    if (depth > (unsigned)ps->max_depth)
        PS_FAIL("pickle nests deeper than %zd levels (not a real snapshot)", ps->max_depth);
    ps->depth[ps->height++] = (unsigned short)depth;
    return 0;
}

static int ps_new(PickScan *ps, unsigned depth) {  /* an object is created and pushed */
    if (++ps->n_objects > ps->max_objects)
        PS_FAIL("pickle creates more than %zd objects (not a real snapshot)", ps->max_objects);
    return ps_push(ps, depth);
}

static unsigned ps_pop_to_mark(PickScan *ps) {  /* deepest item above the last mark; pops them and it */
    Py_ssize_t base = ps->n_marks ? ps->marks[--ps->n_marks] : 0;
    unsigned deepest = 0;
    if (base > ps->height) base = ps->height;
    for (Py_ssize_t k = base; k < ps->height; k++)
        if (ps->depth[k] > deepest) deepest = ps->depth[k];
    ps->height = base;
    return deepest;
}

static int ps_raise_top(PickScan *ps, unsigned inner) {  /* the container on top now holds an item */
    if (ps->height <= 0) return 0;  /* the unpickler reports the malformed stream */
    if (inner + 1 > (unsigned)ps->max_depth)
        PS_FAIL("pickle nests deeper than %zd levels (not a real snapshot)", ps->max_depth);
    if (ps->depth[ps->height - 1] < inner + 1) ps->depth[ps->height - 1] = (unsigned short)(inner + 1);
    return 0;
}

static int ps_memo(PickScan *ps, unsigned long long index) {
    if (++ps->memo_stores > ps->n_objects + 1)
        PS_FAIL("pickle memoises more often than it creates objects (%zd times; not a real snapshot)",
                ps->memo_stores);
    if (index > (unsigned long long)ps->n_objects + 1)
        PS_FAIL("pickle memo index %llu is beyond the %zd objects created so far (not a real snapshot)",
                index, ps->n_objects);
    return 0;
}

static long long ps_le(const unsigned char *p, int n) {
    unsigned long long v = 0;
    for (int k = n - 1; k >= 0; k--) v = (v << 8) | p[k];
    return (long long)v;
}

/* 0: went on; 1: stop here (STOP, truncated, refused opcode); -1: refused with ps->reason */
static int ps_run(PickScan *ps, const unsigned char *buf, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char op = buf[i++];
        Py_ssize_t len = 0;
        switch (op) {
        case '.': return 1;
        case '(':
            if (ps->n_marks >= ps->max_depth)
                PS_FAIL("pickle nests deeper than %zd levels (not a real snapshot)", ps->max_depth);
            ps->marks[ps->n_marks++] = ps->height;
            break;
        case '0': if (ps->height > 0) ps->height--; break;
        case '1': ps_pop_to_mark(ps); break;
        case '2': if (ps_push(ps, ps->height ? ps->depth[ps->height - 1] : 0) < 0) return -1; break;
        /* text arguments up to a newline */
        case 'F': case 'I': case 'L': case 'S': case 'V': case 'p': case 'g': {
            const unsigned char *nl = memchr(buf + i, '\n', (size_t)(n - i));
            if (!nl) return 1;
            Py_ssize_t arg = nl - (buf + i);
            if ((op == 'I' || op == 'L') && arg > ps->max_text_arg)
                PS_FAIL("pickle holds an integer of %zd characters (a memory snapshot's numbers are 64-bit)", arg);
            if ((op == 'p' || op == 'g') && arg > ps->max_text_arg)
                PS_FAIL("pickle memo index written with %zd characters (not a real snapshot)", arg);
            if (op == 'p') {
                unsigned long long index = 0;
                for (Py_ssize_t k = 0; k < arg; k++)
                    if (buf[i + k] >= '0' && buf[i + k] <= '9' && index < PS_INDEX_CAP)
                        index = index * 10 + (buf[i + k] - '0');
                if (index > PS_INDEX_CAP) index = PS_INDEX_CAP;
                i += arg + 1;
                if (ps_memo(ps, index) < 0) return -1;
                break;
            }
            i += arg + 1;
            if (op != 'g' && ps_new(ps, 0) < 0) return -1;
            if (op == 'g' && ps_push(ps, 0) < 0) return -1;
            break;
        }
        case 'J': len = 4; goto scalar;
        case 'K': len = 1; goto scalar;
        case 'M': len = 2; goto scalar;
        case 'G': len = 8; goto scalar;
        case 'N': case 0x88: case 0x89: len = 0; goto scalar;
        case 0x8a: case 0x8b: {  /* LONG1, LONG4 */
            int w = op == 0x8a ? 1 : 4;
            if (i + w > n) return 1;
            long long nb = op == 0x8a ? buf[i] : (long long)(int32_t)ps_le(buf + i, 4);
            if (nb < 0) return 1;
            if (nb > ps->max_int_bytes)
                PS_FAIL("pickle holds an integer of %lld bits (a memory snapshot's numbers are 64-bit)", nb * 8);
            len = w + (Py_ssize_t)nb;
            goto scalar;
        }
        /* length-prefixed strings and bytes */
        case 'U': case 'C': case 0x8c: case 'T': case 'X': case 'B': case 0x8d: case 0x8e: case 0x96: {
            int w = (op == 'U' || op == 'C' || op == 0x8c) ? 1 : (op == 'T' || op == 'X' || op == 'B') ? 4 : 8;
            if (i + w > n) return 1;
            long long nb = w == 1 ? buf[i] : w == 4 ? (op == 'T' ? (long long)(int32_t)ps_le(buf + i, 4)
                                                      : ps_le(buf + i, 4)) : ps_le(buf + i, 8);
            if (nb < 0) return 1;  /* the unpickler reports it */
            if (nb > n - i - w)
                PS_FAIL("pickle is truncated (an argument of %lld bytes runs past its end)", nb);
            len = w + (Py_ssize_t)nb;
            goto scalar;
        }
        case ']': case '}': case ')': case 0x8f:
            if (ps_new(ps, 1) < 0) return -1;
            break;
        case 'a': {
            unsigned inner = ps->height ? ps->depth[--ps->height] : 0;
            if (ps_raise_top(ps, inner) < 0) return -1;
            break;
        }
        case 's': {
            unsigned inner = 0;
            for (int k = 0; k < 2 && ps->height; k++)
                if (ps->depth[--ps->height] > inner) inner = ps->depth[ps->height];
            if (ps_raise_top(ps, inner) < 0) return -1;
            break;
        }
        case 'e': case 'u': case 0x90: {  /* APPENDS, SETITEMS, ADDITEMS */
            unsigned inner = ps_pop_to_mark(ps);
            if (ps_raise_top(ps, inner) < 0) return -1;
            break;
        }
        case 'l': case 'd': case 't': case 0x91: {  /* LIST, DICT, TUPLE, FROZENSET from the mark */
            unsigned inner = ps_pop_to_mark(ps);
            if (ps_new(ps, inner + 1) < 0) return -1;
            break;
        }
        case 0x85: case 0x86: case 0x87: {  /* TUPLE1..3 */
            unsigned inner = 0;
            for (int k = 0; k < op - 0x84 && ps->height; k++)
                if (ps->depth[--ps->height] > inner) inner = ps->depth[ps->height];
            if (ps_new(ps, inner + 1) < 0) return -1;
            break;
        }
        case 'h': if (i + 1 > n) return 1; i += 1; if (ps_push(ps, 0) < 0) return -1; break;
        case 'j': if (i + 4 > n) return 1; i += 4; if (ps_push(ps, 0) < 0) return -1; break;
        case 'q': if (i + 1 > n) return 1; if (ps_memo(ps, buf[i]) < 0) return -1; i += 1; break;
        case 'r':
            if (i + 4 > n) return 1;
            if (ps_memo(ps, (unsigned long long)ps_le(buf + i, 4)) < 0) return -1;
            i += 4;
            break;
        case 0x94: if (ps_memo(ps, (unsigned long long)ps->memo_stores) < 0) return -1; break;
        case 0x80: i += 1; break;  /* PROTO */
        case 0x95: i += 8; break;  /* FRAME: its opcodes follow in line */
        default: return 1;  /* not plain data, or not an opcode: the unpickler refuses it */
        }
        continue;
    scalar:
        if (i + len > n) return 1;
        i += len;
        if (ps_new(ps, 0) < 0) return -1;
    }
    return 1;
}

static PyObject *pickle_bounds(PyObject *self, PyObject *args) {
    Py_buffer view;
    PickScan ps;
    memset(&ps, 0, sizeof ps);
    if (!PyArg_ParseTuple(args, "y*nnnnn", &view, &ps.max_objects, &ps.max_depth, &ps.max_stack,
                          &ps.max_int_bytes, &ps.max_text_arg))
        return NULL;
    if (ps.max_depth < 1 || ps.max_stack < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "max_depth and max_stack must be positive");
        return NULL;
    }
    ps.marks = malloc((size_t)(ps.max_depth + 1) * sizeof *ps.marks);
    if (!ps.marks) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ps_run(&ps, (const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    free(ps.marks);
    free(ps.depth);
    PyBuffer_Release(&view);
    if (rc < 0) return PyUnicode_FromString(ps.reason);
    Py_RETURN_NONE;
}
