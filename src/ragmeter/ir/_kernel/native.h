/*
 * ragmeter.ir._native: the ingestion and scoring kernels of the IR engine (one extension, several files).
 *
 * Why native: parsing 10M TREC lines, matching each retrieved doc to its query's judgments and
 * sorting every query by (float32 score desc, doc id desc byte-wise) dominates an evaluation;
 * numpy needs ~4 s for that at 10M rows, this code a fraction of it. The pure-numpy reference in
 * _reference.py computes the same things and the tests hold the two equal.
 *
 * Layout handed back to Python (no per-row Python objects):
 *   qoff    int64[nq+1]   rows of query i are qoff[i] .. qoff[i+1]-1
 *   blob    bytes         every doc id of every row, concatenated, in row order
 *   doff    int64[n+1]    doc id of row r is blob[doff[r] : doff[r+1]]
 *   values  float64[n]    scores (run) / int32[n] grades (qrels)
 * Run rows are in trec_eval's rank order inside each query; qrels rows keep file order.
 *
 * Files: module.c (module, threads, line count and text check), numbers.c (tokenising a line, numbers, query-id interning),
 * parse.c (the general parser), fastparse.c (the in-place parser for files whose queries are contiguous),
 * group.c (grouping, de-duplication, ranking), judge.c, measures.c.
 */
#ifndef RAGMETER_NATIVE_H
#define RAGMETER_NATIVE_H

#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ragmeter_ir_native_ARRAY_API
#ifndef RAGMETER_NATIVE_MODULE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_VERSION 4 /* bumped with every change of signatures or measure codes: ir/_bytes.py checks it */

typedef struct {
    int64_t doc;  /* offset of the doc id in the base buffer */
    double v;     /* score or grade */
    int32_t q;    /* query index */
    int32_t len;  /* doc id length; -1 = dropped duplicate */
} Row;

static inline uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t k;
        memcpy(&k, s, 8);
        h ^= k;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    uint64_t k = 0;
    memcpy(&k, s, n);
    h ^= k;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 29;
    return h;
}

/* trec_eval's rank order of two rows: score descending compared as float32, then doc id descending
 * byte-wise (as strcmp); < 0 when (sx, x) ranks before (sy, y) */
static inline int rank_cmp(double vx, const char *x, size_t lx, double vy, const char *y, size_t ly) {
    float sx = (float)vx, sy = (float)vy; /* trec_eval keeps scores in a C float */
    if (sx > sy) return -1;
    if (sx < sy) return 1;
    int c = memcmp(x, y, lx < ly ? lx : ly);
    if (c == 0) c = (lx > ly) - (lx < ly);
    return -c;
}

/* module.c */
int set_error(long line, long line2, const char *fmt, ...);
int n_threads(int64_t work);
typedef void *(*WorkFn)(void *);
void run_parallel(WorkFn fn, void *args, size_t size, int n);
PyObject *new_array(npy_intp n, int type);
void split_queries(const int64_t *count, int64_t nq, int n, int64_t *bounds);
void release_pages(const char *from, const char *to);
void small_pages(void *p, size_t n);
int count_lines(const char **cut, int nt, int mapped, int64_t *row0);
void cut_shares(const char *data, Py_ssize_t len, int nt, const char **cut);

/* numbers.c */
int parse_double(const char *s, size_t n, double *out);
int parse_grade(const char *s, size_t n, double *out);
typedef struct {
    const char *q, *doc; /* query and doc id tokens */
    int32_t qlen, dlen;
    double v;
} LineRow;
/* the next row from *pos on (blank lines skipped, *lineno counting every line): 1 a row in *row (*pos moved
 * past its line), 0 no more rows before end, -1 an error described in err (*lineno is its line) */
int next_row(const char **pos, const char *end, int is_run, LineRow *row, long *lineno, char *err, size_t errsz);
typedef struct {
    const char *base;
    int64_t *off; /* per interned id: offset in base */
    int32_t *len;
    int32_t *slots; /* -1 empty, else id index */
    size_t nslots, n, cap;
} Interner;
int interner_init(Interner *t, const char *base);
void interner_free(Interner *t);
int32_t interner_find(const Interner *t, int64_t off, int32_t len);
int32_t intern(Interner *t, int64_t off, int32_t len);
PyObject *interned_names(const Interner *t);

/* group.c */
PyObject *finish(const char *base, Row *rows, int64_t n, int64_t nq, int is_run, int keep_first);

/* parse.c / fastparse.c */
PyObject *parse_general(const char *data, Py_ssize_t len, int is_run, int keep_first);
/* NULL with no exception set: the file does not suit the in-place parser (use parse_general); None: a file
 * mapping (mapped) that is not plain ASCII text */
PyObject *parse_fast(const char *data, Py_ssize_t len, int is_run, int mapped);

/* the module's functions */
PyObject *py_parse_trec(PyObject *self, PyObject *args);
PyObject *py_canonicalize(PyObject *self, PyObject *args);
PyObject *py_judge(PyObject *self, PyObject *args);
PyObject *py_measures(PyObject *self, PyObject *args);

#endif
