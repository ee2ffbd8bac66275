/* The module: its function table, the thread helpers every kernel uses, and scan_text. */
#define RAGMETER_NATIVE_MODULE
#include "native.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

int set_error(long line, long line2, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* ValueError(("input", line, line2, message as bytes)): a tuple value becomes the exception's args.
     * The message quotes file bytes, which need not be UTF-8: Python decodes and escapes it. */
    int n = (int)strlen(msg);
    PyObject *args = Py_BuildValue("(slly#)", "input", line, line2, msg, (Py_ssize_t)n);
    if (args) {
        PyErr_SetObject(PyExc_ValueError, args);
        Py_DECREF(args);
    }
    return -1;
}

/* ---------------- threads ---------------- */
/* Work is split by query (or by line, for tokenising) over a few POSIX threads with the GIL released:
 * the queries are independent, and these machines have cores to spare while Python waits. */
int n_threads(int64_t work) {
    /* RAGMETER_THREADS=N forces N threads whatever the size (the tests use it to split small inputs) */
    static int cached = 0, forced = 0;
    if (!cached) {
        const char *env = getenv("RAGMETER_THREADS");
        forced = env && *env;
        long n = forced ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
        cached = (int)(n < 1 ? 1 : n > 16 ? 16 : n);
    }
    if (!forced && work < 20000) return 1; /* small inputs: a thread costs more than it saves */
    return cached;
}


/* run fn on each of n argument blocks (size bytes apart), the first on this thread */
void run_parallel(WorkFn fn, void *args, size_t size, int n) {
    pthread_t tid[16];
    int started[16] = {0};
    for (int t = 1; t < n; t++) started[t] = pthread_create(&tid[t], NULL, fn, (char *)args + t * size) == 0;
    fn(args);
    for (int t = 1; t < n; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            fn((char *)args + t * size); /* could not start a thread: do its share here */
    }
}


PyObject *new_array(npy_intp n, int type) { return PyArray_SimpleNew(1, &n, type); }

/* split queries 0..nq-1 into n shares of about equal rows (count = row offsets per query) */
void split_queries(const int64_t *count, int64_t nq, int n, int64_t *bounds) {
    int64_t total = count[nq], q = 0;
    bounds[0] = 0;
    for (int t = 1; t < n; t++) {
        int64_t want = total / n * t;
        while (q < nq && count[q] < want) q++;
        bounds[t] = q;
    }
    bounds[n] = nq;
}


/* Small pages for a large output buffer about to be filled once, front to back: with transparent huge pages
 * each first touch zeroes 2 MB ahead of the writer, out of cache; measured on the 10M-row run, the parse took
 * a quarter less CPU time with 4 KB pages. */
void small_pages(void *p, size_t n) {
    static long page = 0;
    if (!page) page = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
#ifdef MADV_NOHUGEPAGE
    if (b > a) madvise((void *)a, b - a, MADV_NOHUGEPAGE);
#endif
}

/* cut data[0:len] into nt shares of about equal bytes, each ending after a newline: share t is cut[t]..cut[t+1] */
void cut_shares(const char *data, Py_ssize_t len, int nt, const char **cut) {
    const char *end = data + len;
    cut[0] = data;
    for (int t = 1; t < nt; t++) {
        const char *p = data + len / nt * t;
        if (p < cut[t - 1]) p = cut[t - 1];
        const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
        cut[t] = nl ? nl + 1 : end;
    }
    cut[nt] = end;
}

/* Drop the pages of a read-only file mapping from this process, from the page holding `from` up to the one
 * holding `to` (excluded): the page cache keeps them and a later read (another thread's, an error path's)
 * faults them back in with the same bytes. The parsers call it behind themselves so that a 370 MB run
 * never counts whole in the process's memory. */
void release_pages(const char *from, const char *to) {
    static long page = 0;
    if (!page) page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)from & ~((uintptr_t)page - 1);
    uintptr_t b = (uintptr_t)to & ~((uintptr_t)page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

/* scan_text(buffer, release) -> (offset of the first NUL byte or -1, whether any byte is >= 0x80): the cheap
 * part of the text checks, so that a plain ASCII file mapped from disk is never copied into a bytes object.
 * release: the buffer is a read-only file mapping whose pages may be dropped behind the scan. */
#define SCAN_CHUNK ((Py_ssize_t)8 << 20)
PyObject *py_scan_text(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &buf, &release)) return NULL;
    const unsigned char *s = buf.buf;
    Py_ssize_t n = buf.len, nul = -1;
    uint64_t acc = 0;
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t at = 0; at < n; at += SCAN_CHUNK) {
        Py_ssize_t end = at + SCAN_CHUNK < n ? at + SCAN_CHUNK : n, i = at;
        if (nul < 0) {
            const unsigned char *z = memchr(s + at, 0, (size_t)(end - at));
            if (z) nul = (Py_ssize_t)(z - s);
        }
        for (; i + 8 <= end; i += 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            acc |= w;
        }
        for (; i < end; i++) acc |= s[i];
        if (release) release_pages((const char *)s + at, (const char *)s + end);
    }
    Py_END_ALLOW_THREADS PyBuffer_Release(&buf);
    int high = (acc & 0x8080808080808080ULL) != 0;
    return Py_BuildValue("(nO)", nul, high ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"scan_text", py_scan_text, METH_VARARGS,
     "scan_text(buffer, release=False) -> (first NUL offset or -1, any byte >= 0x80)"},
    {"parse_trec", py_parse_trec, METH_VARARGS,
     "parse_trec(data, is_run, keep_first, release=False) -> (query_ids, (qoff, blob, doff, values))"},
    {"canonicalize", py_canonicalize, METH_VARARGS,
     "canonicalize(qidx, blob, doff, values, nq, is_run, keep_first) -> (qoff, blob, doff, values)"},
    {"judge", py_judge, METH_VARARGS, "grade of every run row from the qrels (INT32_MIN = unjudged)"},
    {"measures", py_measures, METH_VARARGS, "per-query values of the requested measures"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    import_array();
    PyObject *m = PyModule_Create(&moduledef);
    if (m && PyModule_AddIntConstant(m, "KERNEL_VERSION", KERNEL_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
