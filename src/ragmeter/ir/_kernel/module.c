/* The module: its function table, the thread helpers every kernel uses, and the line count. */
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

typedef struct {
    const unsigned char *start, *end;
    int mapped;
    int64_t lines;
    int not_plain;
} CountJob;

#define COUNT_CHUNK ((size_t)4 << 20)

static void *count_work(void *arg) {
    CountJob *c = arg;
    int64_t n = 0;
    unsigned char any = 0, nul = 0;
    for (const unsigned char *p = c->start; p < c->end;) {
        const unsigned char *stop = (size_t)(c->end - p) > COUNT_CHUNK ? p + COUNT_CHUNK : c->end;
        for (const unsigned char *s = p; s < stop; s++) { /* one pass the compiler vectorises */
            n += *s == '\n';
            any |= *s;
            nul |= *s == 0;
        }
        if (c->mapped) release_pages((const char *)p, (const char *)stop);
        p = stop;
    }
    c->lines = n + (c->end > c->start && c->end[-1] != '\n'); /* a last line without its newline counts */
    c->not_plain = (any & 0x80) || nul;
    return NULL;
}

/* row0[t]: the lines before share t (where its rows start, unless a line is blank). For a file mapping
 * (mapped), the same pass drops the pages behind it and checks the text is plain ASCII without NUL bytes:
 * returns 1 when it is not (Python then reads the file with the full checks: gzip, BOM, UTF-8). */
int count_lines(const char **cut, int nt, int mapped, int64_t *row0) {
    CountJob jobs[16];
    for (int t = 0; t < nt; t++)
        jobs[t] = (CountJob){(const unsigned char *)cut[t], (const unsigned char *)cut[t + 1], mapped, 0, 0};
    Py_BEGIN_ALLOW_THREADS run_parallel(count_work, jobs, sizeof(CountJob), nt);
    Py_END_ALLOW_THREADS int not_plain = 0;
    row0[0] = 0;
    for (int t = 0; t < nt; t++) {
        row0[t + 1] = row0[t] + jobs[t].lines;
        not_plain |= mapped && jobs[t].not_plain;
    }
    return not_plain;
}

static PyMethodDef methods[] = {
    {"parse_trec", py_parse_trec, METH_VARARGS,
     "parse_trec(data, is_run, keep_first, mapped=False) -> (query_ids, (qoff, blob, doff, values)) or None"},
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
