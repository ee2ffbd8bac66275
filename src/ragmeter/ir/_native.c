/*
 * ragmeter.ir._native: the ingestion and scoring kernels of the IR engine.
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
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t doc;   /* offset of the doc id in the base buffer */
    double v;      /* score or grade */
    int32_t q;     /* query index */
    int32_t len;   /* doc id length; -1 = dropped duplicate */
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

static int set_error(long line, long line2, const char *fmt, ...) {
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

/* ---------------- query-id interning (grows) ---------------- */
typedef struct {
    const char *base;
    int64_t *off; /* per interned id: offset in base */
    int32_t *len;
    int32_t *slots; /* -1 empty, else id index */
    size_t nslots, n, cap;
} Interner;

static int interner_init(Interner *t, const char *base) {
    t->base = base;
    t->nslots = 1024;
    t->cap = 512;
    t->n = 0;
    t->slots = malloc(t->nslots * sizeof(int32_t));
    t->off = malloc(t->cap * sizeof(int64_t));
    t->len = malloc(t->cap * sizeof(int32_t));
    if (!t->slots || !t->off || !t->len) return -1;
    memset(t->slots, 0xff, t->nslots * sizeof(int32_t));
    return 0;
}

static void interner_free(Interner *t) {
    free(t->slots);
    free(t->off);
    free(t->len);
}

static int interner_grow(Interner *t) {
    size_t ns = t->nslots * 2;
    int32_t *slots = malloc(ns * sizeof(int32_t));
    if (!slots) return -1;
    memset(slots, 0xff, ns * sizeof(int32_t));
    for (size_t i = 0; i < t->n; i++) {
        uint64_t h = hash_bytes(t->base + t->off[i], (size_t)t->len[i]) & (ns - 1);
        while (slots[h] >= 0) h = (h + 1) & (ns - 1);
        slots[h] = (int32_t)i;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

/* returns the id's index, interning it if new; -1 on memory error */
static int32_t intern(Interner *t, int64_t off, int32_t len) {
    const char *s = t->base + off;
    uint64_t h = hash_bytes(s, (size_t)len) & (t->nslots - 1);
    for (;;) {
        int32_t i = t->slots[h];
        if (i < 0) break;
        if (t->len[i] == len && memcmp(t->base + t->off[i], s, (size_t)len) == 0) return i;
        h = (h + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap *= 2;
        int64_t *o = realloc(t->off, t->cap * sizeof(int64_t));
        if (!o) return -1;
        t->off = o;
        int32_t *l = realloc(t->len, t->cap * sizeof(int32_t));
        if (!l) return -1;
        t->len = l;
    }
    t->off[t->n] = off;
    t->len[t->n] = len;
    t->slots[h] = (int32_t)t->n;
    t->n++;
    if (t->n * 2 > t->nslots && interner_grow(t) < 0) return -1;
    return (int32_t)(t->n - 1);
}

/* ---------------- number parsing ---------------- */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Exact (correctly rounded) parse of a decimal token; 0 ok, -1 not a number, -2 infinite (or overflows). */
static int parse_double(const char *s, size_t n, double *out) {
    /* Fast path (Clinger): <= 15 significant digits, <= 22 fractional digits: m / 10^e is exact-rounded. */
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    uint64_t m = 0;
    int digits = 0, frac = 0, seen_dot = 0, any = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            any = 1;
            if (m == 0 && c == '0' && !seen_dot) continue; /* leading zeros */
            if (digits >= 15) break;
            m = m * 10 + (uint64_t)(c - '0');
            if (m) digits++;
            if (seen_dot) frac++;
        } else if (c == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
    }
    if (i == n && any && frac <= 22) {
        double d = (double)m;
        if (frac) d /= POW10[frac];
        *out = neg ? -d : d;
        return 0;
    }
    /* Slow path: strtod on a NUL-terminated copy. */
    char buf[128];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + n || isnan(d)) return -1;
    if (!isfinite(d)) return -2;
    *out = d;
    return 0;
}

static int parse_grade(const char *s, size_t n, double *out) {
    double d;
    if (parse_double(s, n, &d) != 0 || d != floor(d) || fabs(d) > 2147483647.0) return -1;
    *out = d;
    return 0;
}

/* ---------------- threads ---------------- */
/* Work is split by query (or by line, for tokenising) over a few POSIX threads with the GIL released:
 * the queries are independent, and these machines have cores to spare while Python waits. */
static int n_threads(int64_t work) {
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

typedef void *(*WorkFn)(void *);

/* run fn on each of n argument blocks (size bytes apart), the first on this thread */
static void run_parallel(WorkFn fn, void *args, size_t size, int n) {
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

/* ---------------- grouping, de-duplication and ranking ---------------- */
typedef struct {
    const char *base;
    const Row *rows;
} SortCtx;

static int cmp_rank(const void *a, const void *b, void *vctx) {
    const SortCtx *ctx = vctx;
    const Row *x = &ctx->rows[*(const int64_t *)a];
    const Row *y = &ctx->rows[*(const int64_t *)b];
    float sx = (float)x->v, sy = (float)y->v; /* trec_eval keeps scores in a C float */
    if (sx > sy) return -1;
    if (sx < sy) return 1;
    size_t lx = (size_t)x->len, ly = (size_t)y->len;
    int c = memcmp(ctx->base + x->doc, ctx->base + y->doc, lx < ly ? lx : ly);
    if (c == 0) c = (lx > ly) - (lx < ly);
    return -c; /* doc id descending, as strcmp */
}

static PyObject *new_array(npy_intp n, int type) { return PyArray_SimpleNew(1, &n, type); }

typedef struct {
    const char *base;
    Row *rows;
    int64_t *perm, *count, *gend, *qblob;
    int64_t q0, q1, maxg;
    int is_run, keep_first;
    int64_t dup_q, dup_row, dup_first; /* first duplicate of this share (dup_q = -1: none) */
    int nomem;
} GroupJob;

/* de-duplicate and rank the groups q0..q1-1: gend[q] = end of the kept rows, qblob[q] = their id bytes */
static void *group_work(void *arg) {
    GroupJob *job = arg;
    const char *base = job->base;
    Row *rows = job->rows;
    int64_t *perm = job->perm;
    size_t nslots = 16;
    while ((int64_t)nslots < 2 * job->maxg) nslots <<= 1;
    int32_t *slots = malloc(nslots * sizeof(int32_t));
    job->dup_q = -1;
    if (!slots) {
        job->nomem = 1;
        return NULL;
    }
    SortCtx ctx = {base, rows};
    for (int64_t qi = job->q0; qi < job->q1; qi++) {
        int64_t lo = job->count[qi], hi = job->count[qi + 1];
        size_t mask = 16;
        while ((int64_t)mask < 2 * (hi - lo)) mask <<= 1;
        memset(slots, 0xff, mask * sizeof(int32_t));
        mask -= 1;
        for (int64_t j = lo; j < hi; j++) { /* file order: the first occurrence wins */
            Row *x = &rows[perm[j]];
            uint64_t h = hash_bytes(base + x->doc, (size_t)x->len) & mask;
            int dup = 0;
            for (;;) {
                int32_t s = slots[h];
                if (s < 0) break;
                const Row *y = &rows[perm[lo + s]];
                if (y->len == x->len && memcmp(base + y->doc, base + x->doc, (size_t)x->len) == 0) {
                    if (!job->keep_first) {
                        job->dup_q = qi;
                        job->dup_row = perm[j];
                        job->dup_first = perm[lo + s];
                        free(slots);
                        return NULL;
                    }
                    dup = 1;
                    break;
                }
                h = (h + 1) & mask;
            }
            if (dup) {
                x->len = -1;
            } else {
                slots[h] = (int32_t)(j - lo);
            }
        }
        /* compact the group (drop duplicates), then rank it */
        int64_t w = lo, bytes = 0;
        for (int64_t j = lo; j < hi; j++)
            if (rows[perm[j]].len >= 0) perm[w++] = perm[j];
        if (job->is_run && w - lo > 1) {
            /* runs are usually written in rank order already: check before sorting */
            int64_t j = lo + 1;
            while (j < w && cmp_rank(&perm[j - 1], &perm[j], &ctx) < 0) j++;
            if (j < w) qsort_r(perm + lo, (size_t)(w - lo), sizeof(int64_t), cmp_rank, &ctx);
        }
        for (int64_t j = lo; j < w; j++) bytes += rows[perm[j]].len;
        job->gend[qi] = w;
        job->qblob[qi] = bytes;
    }
    free(slots);
    return NULL;
}

typedef struct {
    const char *base;
    const Row *rows;
    const int64_t *perm, *count, *gend, *qo, *qpos;
    char *bl;
    int64_t *dof;
    double *vd;
    int32_t *vi;
    int64_t q0, q1;
} CopyJob;

static void *copy_work(void *arg) {
    CopyJob *c = arg;
    for (int64_t qi = c->q0; qi < c->q1; qi++) {
        int64_t out = c->qo[qi], pos = c->qpos[qi];
        for (int64_t j = c->count[qi]; j < c->gend[qi]; j++) {
            const Row *x = &c->rows[c->perm[j]];
            memcpy(c->bl + pos, c->base + x->doc, (size_t)x->len);
            pos += x->len;
            if (c->vd)
                c->vd[out] = x->v;
            else
                c->vi[out] = (int32_t)x->v;
            c->dof[++out] = pos;
        }
    }
    return NULL;
}

/* split queries 0..nq-1 into n shares of about equal rows (count = row offsets per query) */
static void split_queries(const int64_t *count, int64_t nq, int n, int64_t *bounds) {
    int64_t total = count[nq], q = 0;
    bounds[0] = 0;
    for (int t = 1; t < n; t++) {
        int64_t want = total / n * t;
        while (q < nq && count[q] < want) q++;
        bounds[t] = q;
    }
    bounds[n] = nq;
}

/*
 * Group rows by query (stable), drop or reject duplicate doc ids within a query, sort run groups
 * into rank order, and emit the columnar layout. On a duplicate with keep_first == 0, raises
 * ValueError(("duplicate", row, first_row, message)) with 0-based row indices.
 */
static PyObject *finish(const char *base, Row *rows, int64_t n, int64_t nq, int is_run, int keep_first) {
    PyObject *result = NULL;
    int64_t *count = calloc((size_t)nq + 1, sizeof(int64_t));
    int64_t *perm = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    int64_t *gend = malloc((size_t)(nq > 0 ? nq : 1) * sizeof(int64_t));
    int64_t *qblob = malloc((size_t)(nq + 1) * sizeof(int64_t));
    int64_t *qo_tmp = NULL;
    if (!count || !perm || !gend || !qblob) goto nomem;
    for (int64_t r = 0; r < n; r++) count[rows[r].q + 1]++;
    for (int64_t i = 0; i < nq; i++) count[i + 1] += count[i];
    {
        int64_t *fill = malloc((size_t)(nq > 0 ? nq : 1) * sizeof(int64_t));
        if (!fill) goto nomem;
        memcpy(fill, count, (size_t)nq * sizeof(int64_t));
        for (int64_t r = 0; r < n; r++) perm[fill[rows[r].q]++] = r;
        free(fill);
    }
    int64_t maxg = 0;
    for (int64_t i = 0; i < nq; i++)
        if (count[i + 1] - count[i] > maxg) maxg = count[i + 1] - count[i];

    int nt = n_threads(n);
    int64_t bounds[17];
    split_queries(count, nq, nt, bounds);
    GroupJob jobs[16];
    for (int t = 0; t < nt; t++)
        jobs[t] = (GroupJob){base, rows, perm, count, gend, qblob, bounds[t], bounds[t + 1], maxg, is_run, keep_first,
                             -1, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS run_parallel(group_work, jobs, sizeof(GroupJob), nt);
    Py_END_ALLOW_THREADS for (int t = 0; t < nt; t++) {
        if (jobs[t].nomem) goto nomem;
        if (jobs[t].dup_q >= 0) { /* the first share with a duplicate holds the first in query order */
            const Row *x = &rows[jobs[t].dup_row];
            PyObject *args = Py_BuildValue("(sLLy#)", "duplicate", (long long)jobs[t].dup_row,
                                           (long long)jobs[t].dup_first, base + x->doc, (Py_ssize_t)x->len);
            PyErr_SetObject(PyExc_ValueError, args);
            Py_XDECREF(args);
            goto done;
        }
    }
    /* where each query's rows and bytes start in the output */
    qo_tmp = malloc((size_t)(nq + 1) * sizeof(int64_t));
    if (!qo_tmp) goto nomem;
    int64_t kept = 0, blob_len = 0;
    for (int64_t qi = 0; qi < nq; qi++) {
        int64_t b = qblob[qi];
        qo_tmp[qi] = kept;
        qblob[qi] = blob_len;
        kept += gend[qi] - count[qi];
        blob_len += b;
    }
    qo_tmp[nq] = kept;
    {
        PyObject *qoff = new_array(nq + 1, NPY_INT64);
        PyObject *doff = new_array(kept + 1, NPY_INT64);
        PyObject *vals = new_array(kept, is_run ? NPY_FLOAT64 : NPY_INT32);
        PyObject *blob = PyBytes_FromStringAndSize(NULL, blob_len);
        if (!qoff || !doff || !vals || !blob) {
            Py_XDECREF(qoff);
            Py_XDECREF(doff);
            Py_XDECREF(vals);
            Py_XDECREF(blob);
            goto done;
        }
        int64_t *qo = PyArray_DATA((PyArrayObject *)qoff);
        memcpy(qo, qo_tmp, (size_t)(nq + 1) * sizeof(int64_t));
        int64_t *dof = PyArray_DATA((PyArrayObject *)doff);
        dof[0] = 0;
        CopyJob cj[16];
        for (int t = 0; t < nt; t++)
            cj[t] = (CopyJob){base, rows, perm, count, gend, qo, qblob, PyBytes_AS_STRING(blob), dof,
                              is_run ? PyArray_DATA((PyArrayObject *)vals) : NULL,
                              is_run ? NULL : PyArray_DATA((PyArrayObject *)vals), bounds[t], bounds[t + 1]};
        Py_BEGIN_ALLOW_THREADS run_parallel(copy_work, cj, sizeof(CopyJob), nt);
        Py_END_ALLOW_THREADS result = Py_BuildValue("(NNNN)", qoff, blob, doff, vals);
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(count);
    free(perm);
    free(gend);
    free(qblob);
    free(qo_tmp);
    return result;
}

/* ---------------- TREC text parsing ---------------- */
#define MAXTOK 8
/* ' ', \t, \v, \f, \r: the separators of a line (\n ends it). Other control characters are kept in ids,
 * as trec_eval does (NUL bytes are refused before parsing: C strings would cut the id there); whoever
 * prints an id escapes them. */
static const unsigned char WS[256] = {[' '] = 1, ['\t'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1};
#define IS_WS(c) (WS[(unsigned char)(c)])

typedef struct {
    const char *data, *start, *end;
    long line0; /* lines before start */
    Row *rows;  /* this share's rows; rows[i].q holds the query id's length until interned */
    int64_t *qtok; /* offset of each row's query id */
    int64_t n;
    int is_run;
    long err_line;
    char err[256];
} TokJob;

/* tokenise the lines of one share: rows with their doc id, value and query id token */
static void *tokenize_work(void *arg) {
    TokJob *job = arg;
    const char *data = job->data, *pos = job->start, *end = job->end;
    int ncols = job->is_run ? 6 : 4, vcol = job->is_run ? 4 : 3;
    long lineno = job->line0;
    int64_t n = 0;
    job->err_line = 0;
    while (pos < end) {
        const char *eol = memchr(pos, '\n', (size_t)(end - pos));
        if (!eol) eol = end;
        lineno++;
        const char *tok[MAXTOK];
        size_t tlen[MAXTOK];
        int nt = 0;
        const char *p = pos;
        while (p < eol) {
            while (p < eol && IS_WS(*p)) p++;
            if (p >= eol) break;
            const char *s = p;
            while (p < eol && !IS_WS(*p)) p++;
            if (nt < MAXTOK) {
                tok[nt] = s;
                tlen[nt] = (size_t)(p - s);
            }
            nt++;
        }
        pos = eol + 1;
        if (nt == 0) continue;
        job->err_line = lineno;
        if (nt != ncols) {
            snprintf(job->err, sizeof job->err, "expected %d whitespace-separated columns (%s), found %d", ncols,
                     job->is_run ? "query Q0 doc rank score tag" : "query iteration doc grade", nt);
            return NULL;
        }
        if (tlen[2] > 100000) {
            snprintf(job->err, sizeof job->err, "document id longer than 100000 bytes");
            return NULL;
        }
        double v;
        int bad = job->is_run ? parse_double(tok[vcol], tlen[vcol], &v) : parse_grade(tok[vcol], tlen[vcol], &v);
        if (bad) {
            snprintf(job->err, sizeof job->err,
                     !job->is_run ? "grade '%.*s' is not an integer"
                     : bad == -2  ? "score '%.*s' is not a finite number"
                                  : "score '%.*s' is not a number",
                     (int)(tlen[vcol] > 40 ? 40 : tlen[vcol]), tok[vcol]);
            return NULL;
        }
        job->err_line = 0;
        job->rows[n].doc = tok[2] - data;
        job->rows[n].len = (int32_t)tlen[2];
        job->rows[n].q = (int32_t)tlen[0];
        job->rows[n].v = v;
        job->qtok[n] = tok[0] - data;
        n++;
    }
    job->n = n;
    return NULL;
}

static PyObject *py_parse_trec(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int is_run, keep_first;
    if (!PyArg_ParseTuple(args, "y*pp", &buf, &is_run, &keep_first)) return NULL;
    const char *data = buf.buf;
    const char *end = data + buf.len;
    int nt = n_threads(buf.len / 40);
    /* shares of about equal bytes, cut after a newline; lines and row capacity per share */
    const char *cut[17];
    long lines[17];
    cut[0] = data;
    for (int t = 1; t < nt; t++) {
        const char *p = data + buf.len / nt * t;
        if (p < cut[t - 1]) p = cut[t - 1];
        const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
        cut[t] = nl ? nl + 1 : end;
    }
    cut[nt] = end;
    size_t cap = 0;
    for (int t = 0; t < nt; t++) {
        long c = 0;
        for (const char *p = cut[t]; p < cut[t + 1] && (p = memchr(p, '\n', (size_t)(cut[t + 1] - p))); p++) c++;
        lines[t] = c;
        cap += (size_t)c + 1;
    }
    Row *rows = malloc(cap * sizeof(Row));
    int64_t *qtok = malloc(cap * sizeof(int64_t));
    Interner qids = {0}; /* zeroed: interner_free is safe even when init is skipped */
    PyObject *result = NULL;
    if (!rows || !qtok || interner_init(&qids, data) < 0) {
        PyErr_NoMemory();
        goto out;
    }
    TokJob jobs[16];
    {
        size_t at = 0;
        long line0 = 0;
        for (int t = 0; t < nt; t++) {
            jobs[t] = (TokJob){data, cut[t], cut[t + 1], line0, rows + at, qtok + at, 0, is_run, 0, {0}};
            at += (size_t)lines[t] + 1;
            line0 += lines[t];
        }
    }
    Py_BEGIN_ALLOW_THREADS run_parallel(tokenize_work, jobs, sizeof(TokJob), nt);
    Py_END_ALLOW_THREADS for (int t = 0; t < nt; t++) {
        if (jobs[t].err_line) { /* the first share with an error holds the file's first error */
            set_error(jobs[t].err_line, 0, "%s", jobs[t].err);
            goto out;
        }
    }
    /* intern query ids in file order (rows of one query are usually consecutive: compare with the last) */
    int64_t n = 0;
    int32_t last_q = -1;
    for (int t = 0; t < nt; t++) {
        for (int64_t i = 0; i < jobs[t].n; i++) {
            Row r = jobs[t].rows[i];
            int64_t qo = jobs[t].qtok[i];
            int32_t ql = r.q, q;
            if (last_q >= 0 && qids.len[last_q] == ql && memcmp(data + qids.off[last_q], data + qo, (size_t)ql) == 0)
                q = last_q;
            else
                q = last_q = intern(&qids, qo, ql);
            if (q < 0) {
                PyErr_NoMemory();
                goto out;
            }
            r.q = q;
            rows[n++] = r; /* shares are in file order and compact forwards */
        }
    }
    free(qtok);
    qtok = NULL;
    {
        PyObject *parts = finish(data, rows, n, (int64_t)qids.n, is_run, keep_first);
        if (!parts) goto out;
        PyObject *names = PyList_New((Py_ssize_t)qids.n);
        if (!names) {
            Py_DECREF(parts);
            goto out;
        }
        for (size_t i = 0; i < qids.n; i++) {
            PyObject *s = PyUnicode_DecodeUTF8(data + qids.off[i], qids.len[i], "surrogateescape");
            if (!s) {
                Py_DECREF(parts);
                Py_DECREF(names);
                goto out;
            }
            PyList_SET_ITEM(names, (Py_ssize_t)i, s);
        }
        result = Py_BuildValue("(NN)", names, parts);
    }
out:
    free(rows);
    free(qtok);
    interner_free(&qids);
    PyBuffer_Release(&buf);
    return result;
}

/* canonicalize(qidx int32[n], blob bytes, doff int64[n+1], values float64[n], nq, is_run, keep_first) */
static PyObject *py_canonicalize(PyObject *self, PyObject *args) {
    PyArrayObject *qidx, *doff, *vals;
    Py_buffer blob;
    long long nq;
    int is_run, keep_first;
    if (!PyArg_ParseTuple(args, "O!y*O!O!Lpp", &PyArray_Type, &qidx, &blob, &PyArray_Type, &doff,
                          &PyArray_Type, &vals, &nq, &is_run, &keep_first))
        return NULL;
    PyObject *result = NULL;
    npy_intp n = PyArray_SIZE(qidx);
    if (PyArray_TYPE(qidx) != NPY_INT32 || PyArray_TYPE(doff) != NPY_INT64 || PyArray_TYPE(vals) != NPY_FLOAT64 ||
        !PyArray_IS_C_CONTIGUOUS(qidx) || !PyArray_IS_C_CONTIGUOUS(doff) || !PyArray_IS_C_CONTIGUOUS(vals) ||
        PyArray_SIZE(doff) != n + 1 || PyArray_SIZE(vals) != n) {
        PyErr_SetString(PyExc_TypeError, "canonicalize: bad array types or shapes");
        goto out;
    }
    Row *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof(Row));
    if (!rows) {
        PyErr_NoMemory();
        goto out;
    }
    const int32_t *q = PyArray_DATA(qidx);
    const int64_t *o = PyArray_DATA(doff);
    const double *v = PyArray_DATA(vals);
    for (npy_intp r = 0; r < n; r++) {
        if (q[r] < 0 || q[r] >= nq || o[r + 1] < o[r] || o[r + 1] > blob.len) {
            free(rows);
            PyErr_SetString(PyExc_ValueError, "canonicalize: index out of range");
            goto out;
        }
        rows[r].doc = o[r];
        rows[r].len = (int32_t)(o[r + 1] - o[r]);
        rows[r].q = q[r];
        rows[r].v = v[r];
    }
    result = finish(blob.buf, rows, n, nq, is_run, keep_first);
    free(rows);
out:
    PyBuffer_Release(&blob);
    return result;
}

/*
 * judge(run_qoff, run_blob, run_doff, run_to_qrels int32[nq_run], qrels_qoff, qrels_blob, qrels_doff,
 *       qrels_grade int32) -> int32 grade per run row; INT32_MIN where the doc is not judged.
 */
typedef struct {
    const int64_t *ro, *rd;
    const int32_t *rm;
    const int64_t *qo, *qd;
    const int32_t *qg;
    const char *rb, *qb;
    npy_intp nqq, r0, r1;
    int64_t maxg;
    int32_t *g;
    int nomem;
} JudgeJob;

/* the grade of every row of run queries r0..r1-1 */
static void *judge_work(void *arg) {
    JudgeJob *J = arg;
    const int64_t *ro = J->ro, *rd = J->rd, *qo = J->qo, *qd = J->qd;
    const int32_t *rm = J->rm, *qg = J->qg;
    const char *rb = J->rb, *qb = J->qb;
    npy_intp nqq = J->nqq;
    int32_t *g = J->g;
    size_t nslots = 16;
    while ((int64_t)nslots < 2 * J->maxg) nslots <<= 1;
    int32_t *slots = malloc(nslots * sizeof(int32_t));
    if (!slots) {
        J->nomem = 1;
        return NULL;
    }
    for (npy_intp r = J->r0; r < J->r1; r++) {
        int32_t j = rm[r];
        if (j < 0 || j >= nqq) {
            for (int64_t x = ro[r]; x < ro[r + 1]; x++) g[x] = INT32_MIN;
            continue;
        }
        int64_t lo = qo[j], hi = qo[j + 1];
        size_t mask = 16;
        while ((int64_t)mask < 2 * (hi - lo)) mask <<= 1;
        memset(slots, 0xff, mask * sizeof(int32_t));
        mask -= 1;
        for (int64_t y = lo; y < hi; y++) {
            uint64_t h = hash_bytes(qb + qd[y], (size_t)(qd[y + 1] - qd[y])) & mask;
            while (slots[h] >= 0) h = (h + 1) & mask;
            slots[h] = (int32_t)(y - lo);
        }
        for (int64_t x = ro[r]; x < ro[r + 1]; x++) {
            size_t len = (size_t)(rd[x + 1] - rd[x]);
            const char *s = rb + rd[x];
            uint64_t h = hash_bytes(s, len) & mask;
            int32_t grade = INT32_MIN;
            for (;;) {
                int32_t sl = slots[h];
                if (sl < 0) break;
                int64_t y = lo + sl;
                if ((size_t)(qd[y + 1] - qd[y]) == len && memcmp(qb + qd[y], s, len) == 0) {
                    grade = qg[y];
                    break;
                }
                h = (h + 1) & mask;
            }
            g[x] = grade;
        }
    }
    free(slots);
    return NULL;
}

static PyObject *py_judge(PyObject *self, PyObject *args) {
    PyArrayObject *rqoff, *rdoff, *rmap, *qqoff, *qdoff, *qgrade;
    Py_buffer rblob, qblob;
    if (!PyArg_ParseTuple(args, "O!y*O!O!O!y*O!O!", &PyArray_Type, &rqoff, &rblob, &PyArray_Type, &rdoff,
                          &PyArray_Type, &rmap, &PyArray_Type, &qqoff, &qblob, &PyArray_Type, &qdoff,
                          &PyArray_Type, &qgrade))
        return NULL;
    PyObject *result = NULL;
    const int64_t *ro = PyArray_DATA(rqoff), *rd = PyArray_DATA(rdoff);
    const int32_t *rm = PyArray_DATA(rmap);
    const int64_t *qo = PyArray_DATA(qqoff), *qd = PyArray_DATA(qdoff);
    const int32_t *qg = PyArray_DATA(qgrade);
    const char *rb = rblob.buf, *qb = qblob.buf;
    npy_intp nqr = PyArray_SIZE(rmap), nqq = PyArray_SIZE(qqoff) - 1;
    if (PyArray_TYPE(rqoff) != NPY_INT64 || PyArray_TYPE(rdoff) != NPY_INT64 || PyArray_TYPE(rmap) != NPY_INT32 ||
        PyArray_TYPE(qqoff) != NPY_INT64 || PyArray_TYPE(qdoff) != NPY_INT64 || PyArray_TYPE(qgrade) != NPY_INT32 ||
        PyArray_SIZE(rqoff) != nqr + 1) {
        PyErr_SetString(PyExc_TypeError, "judge: bad array types or shapes");
        goto out;
    }
    npy_intp n = (npy_intp)ro[nqr];
    PyObject *grades = new_array(n, NPY_INT32);
    if (!grades) goto out;
    int32_t *g = PyArray_DATA((PyArrayObject *)grades);
    int64_t maxg = 0;
    for (npy_intp i = 0; i < nqq; i++)
        if (qo[i + 1] - qo[i] > maxg) maxg = qo[i + 1] - qo[i];
    int nt = n_threads(n);
    JudgeJob jobs[16];
    {
        npy_intp r = 0;
        for (int t = 0; t < nt; t++) {
            npy_intp r0 = r;
            int64_t want = n / nt * (t + 1);
            if (t == nt - 1) r = nqr;
            while (r < nqr && ro[r] < want) r++;
            jobs[t] = (JudgeJob){ro, rd, rm, qo, qd, qg, rb, qb, nqq, r0, r, maxg, g, 0};
        }
    }
    Py_BEGIN_ALLOW_THREADS run_parallel(judge_work, jobs, sizeof(JudgeJob), nt);
    Py_END_ALLOW_THREADS for (int t = 0; t < nt; t++) {
        if (jobs[t].nomem) {
            Py_DECREF(grades);
            PyErr_NoMemory();
            goto out;
        }
    }
    result = grades;
out:
    PyBuffer_Release(&rblob);
    PyBuffer_Release(&qblob);
    return result;
}

/* ---------------- measures ---------------- */
enum { M_P = 0, M_RECALL, M_NDCG, M_NDCG_EXP, M_MRR, M_MAP, M_HIT, M_RPREC, M_AQWV, M_BPREF, M_INFAP, M_JUDGED };
#define INFAP_EPSILON 0.00001 /* trec_eval.h */

static int cmp_double_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static inline double gain_of(int32_t g, int expgain) {
    if (g <= 0) return 0.0; /* unjudged (INT32_MIN), negative and zero grades gain nothing */
    return expgain ? pow(2.0, (double)g) - 1.0 : (double)g;
}

/*
 * measures(run_qoff int64[nq_run+1], grades int32[n], qrels_qoff int64[nq+1], qrels_grade int32,
 *          qrels_to_run int32[nq], codes int32[m], ks int64[m], params float64[m], params2 float64[m],
 *          relevance_level) -> (values float64[m, nq], num_rel int64[nq], num_ret int64[nq])
 * k == 0 means no cutoff.
 */
typedef struct {
    const int64_t *ro, *qo, *kk;
    const int32_t *g, *qg, *map, *code;
    const double *p1, *p2;
    npy_intp nq, m, nqr, j0, j1;
    long level;
    int64_t maxg;
    double *val;
    int64_t *nrel_out, *nret_out;
    int nomem;
} MeasJob;

/* the measures of queries j0..j1-1 */
static void *measures_work(void *arg) {
    MeasJob *J = arg;
    const int64_t *ro = J->ro, *qo = J->qo, *kk = J->kk;
    const int32_t *g = J->g, *qg = J->qg, *map = J->map, *code = J->code;
    const double *p1 = J->p1, *p2 = J->p2;
    npy_intp nq = J->nq, m = J->m, nqr = J->nqr;
    long level = J->level;
    double *val = J->val;
    int64_t *nrel_out = J->nrel_out, *nret_out = J->nret_out;
    double *ideal = malloc((size_t)J->maxg * sizeof(double));
    if (!ideal) {
        J->nomem = 1;
        return NULL;
    }
    for (npy_intp j = J->j0; j < J->j1; j++) {
        int64_t num_rel = 0, npos = 0, num_nonrel = 0;
        for (int64_t y = qo[j]; y < qo[j + 1]; y++) {
            if (qg[y] >= level) num_rel++;
            else if (qg[y] >= 0) num_nonrel++; /* judged non-relevant: bpref's pool of non-relevant docs */
            if (qg[y] > 0) ideal[npos++] = (double)qg[y];
        }
        qsort(ideal, (size_t)npos, sizeof(double), cmp_double_desc);
        int32_t r = map[j];
        const int32_t *rg = NULL;
        int64_t n = 0;
        if (r >= 0 && r < nqr) {
            rg = g + ro[r];
            n = ro[r + 1] - ro[r];
        }
        nrel_out[j] = num_rel;
        nret_out[j] = n;
        for (npy_intp mi = 0; mi < m; mi++) {
            int64_t k = kk[mi];
            int64_t lim = (k > 0 && k < n) ? k : n;
            double v = 0.0;
            switch (code[mi]) {
            case M_P:
            case M_RECALL:
            case M_HIT:
            case M_AQWV: {
                int64_t rr = 0;
                for (int64_t i = 0; i < lim; i++) rr += rg[i] >= level;
                if (code[mi] == M_P)
                    v = (double)rr / (double)k;
                else if (code[mi] == M_RECALL)
                    v = num_rel ? (double)rr / (double)num_rel : 0.0;
                else if (code[mi] == M_HIT)
                    v = rr > 0 ? 1.0 : 0.0;
                else {
                    double beta = p1[mi], coll = p2[mi];
                    double pmiss = num_rel ? (double)(num_rel - rr) / (double)num_rel : 0.0;
                    double pfa;
                    if (coll > 0)
                        pfa = coll - (double)num_rel > 0 ? (double)(lim - rr) / (coll - (double)num_rel) : 0.0;
                    else
                        pfa = lim ? (double)(lim - rr) / (double)lim : 0.0;
                    v = 1.0 - pmiss - beta * pfa;
                }
                break;
            }
            case M_NDCG:
            case M_NDCG_EXP: {
                int e = code[mi] == M_NDCG_EXP;
                double dcg = 0.0, idcg = 0.0;
                for (int64_t i = 0; i < lim; i++) {
                    double gn = gain_of(rg[i], e);
                    if (gn > 0) dcg += gn / log2((double)i + 2.0);
                }
                int64_t ilim = (k > 0 && k < npos) ? k : npos;
                for (int64_t i = 0; i < ilim; i++)
                    idcg += (e ? pow(2.0, ideal[i]) - 1.0 : ideal[i]) / log2((double)i + 2.0);
                v = idcg > 0 ? dcg / idcg : 0.0;
                break;
            }
            case M_MRR:
                for (int64_t i = 0; i < lim; i++)
                    if (rg[i] >= level) {
                        v = 1.0 / (double)(i + 1);
                        break;
                    }
                break;
            case M_MAP: {
                int64_t rr = 0;
                double s = 0.0;
                for (int64_t i = 0; i < lim; i++)
                    if (rg[i] >= level) {
                        rr++;
                        s += (double)rr / (double)(i + 1);
                    }
                v = num_rel ? s / (double)num_rel : 0.0;
                break;
            }
            case M_RPREC: {
                int64_t rl = num_rel < n ? num_rel : n, rr = 0;
                for (int64_t i = 0; i < rl; i++) rr += rg[i] >= level;
                v = num_rel ? (double)rr / (double)num_rel : 0.0;
                break;
            }
            case M_BPREF:
            case M_INFAP: {
                /* trec_eval m_bpref.c / m_infap.c: docs absent from the qrels (INT32_MIN) are skipped; a
                 * negative grade is "in the pool but unjudged": skipped by bpref, counted by infAP */
                int64_t nonrel = 0, rel = 0, unj = 0;
                double s = 0.0;
                for (int64_t i = 0; i < lim; i++) {
                    int32_t x = rg[i];
                    if (x == INT32_MIN) continue;
                    if (x < 0) {
                        unj++;
                    } else if (x < level) {
                        nonrel++;
                    } else if (code[mi] == M_BPREF) {
                        if (nonrel > 0) {
                            int64_t a = nonrel < num_rel ? nonrel : num_rel;
                            int64_t b = num_nonrel < num_rel ? num_nonrel : num_rel;
                            s += 1.0 - (double)a / (double)b;
                        } else {
                            s += 1.0;
                        }
                    } else {
                        rel++;
                        if (i == 0) {
                            s += 1.0;
                        } else {
                            double fj = (double)i;
                            s += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((double)(rel - 1 + nonrel + unj) / fj) *
                                                        (((double)(rel - 1) + INFAP_EPSILON) /
                                                         ((double)(rel - 1 + nonrel) + 2 * INFAP_EPSILON));
                        }
                    }
                }
                v = num_rel ? s / (double)num_rel : 0.0;
                break;
            }
            case M_JUDGED: {
                int64_t jd = 0;
                for (int64_t i = 0; i < lim; i++) jd += rg[i] >= 0;
                v = (double)jd / (double)k;
                break;
            }
            default:
                break;
            }
            val[mi * nq + j] = v;
        }
    }
    free(ideal);
    return NULL;
}

static PyObject *py_measures(PyObject *self, PyObject *args) {
    PyArrayObject *rqoff, *grades, *qqoff, *qgrade, *q2r, *codes, *ks, *par, *par2;
    long level;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!l", &PyArray_Type, &rqoff, &PyArray_Type, &grades,
                          &PyArray_Type, &qqoff, &PyArray_Type, &qgrade, &PyArray_Type, &q2r, &PyArray_Type,
                          &codes, &PyArray_Type, &ks, &PyArray_Type, &par, &PyArray_Type, &par2, &level))
        return NULL;
    if (PyArray_TYPE(rqoff) != NPY_INT64 || PyArray_TYPE(grades) != NPY_INT32 || PyArray_TYPE(qqoff) != NPY_INT64 ||
        PyArray_TYPE(qgrade) != NPY_INT32 || PyArray_TYPE(q2r) != NPY_INT32 || PyArray_TYPE(codes) != NPY_INT32 ||
        PyArray_TYPE(ks) != NPY_INT64 || PyArray_TYPE(par) != NPY_FLOAT64 || PyArray_TYPE(par2) != NPY_FLOAT64) {
        PyErr_SetString(PyExc_TypeError, "measures: bad array types");
        return NULL;
    }
    const int64_t *ro = PyArray_DATA(rqoff), *qo = PyArray_DATA(qqoff), *kk = PyArray_DATA(ks);
    const int32_t *g = PyArray_DATA(grades), *qg = PyArray_DATA(qgrade), *map = PyArray_DATA(q2r);
    const int32_t *code = PyArray_DATA(codes);
    const double *p1 = PyArray_DATA(par), *p2 = PyArray_DATA(par2);
    npy_intp nq = PyArray_SIZE(q2r), m = PyArray_SIZE(codes), nqr = PyArray_SIZE(rqoff) - 1;
    npy_intp dims[2] = {m, nq};
    PyObject *out = PyArray_ZEROS(2, dims, NPY_FLOAT64, 0);
    PyObject *nrel_arr = new_array(nq, NPY_INT64);
    PyObject *nret_arr = new_array(nq, NPY_INT64);
    int64_t maxg = 1;
    for (npy_intp j = 0; j < nq; j++)
        if (qo[j + 1] - qo[j] > maxg) maxg = qo[j + 1] - qo[j];
    if (!out || !nrel_arr || !nret_arr) {
        Py_XDECREF(out);
        Py_XDECREF(nrel_arr);
        Py_XDECREF(nret_arr);
        return PyErr_NoMemory();
    }
    int nt = n_threads(nqr > 0 ? ro[nqr] : 0);
    /* shares of about equal retrieved rows */
    MeasJob jobs[16];
    int64_t total = nqr > 0 ? ro[nqr] : 0, acc = 0;
    npy_intp j = 0;
    for (int t = 0; t < nt; t++) {
        npy_intp j0 = j;
        int64_t want = total / nt * (t + 1);
        if (t == nt - 1) j = nq;
        while (j < nq && acc < want) {
            int32_t r = map[j];
            if (r >= 0 && r < nqr) acc += ro[r + 1] - ro[r];
            j++;
        }
        jobs[t] = (MeasJob){ro, qo, kk, g, qg, map, code, p1, p2, nq, m, nqr, j0, j, level, maxg,
                            PyArray_DATA((PyArrayObject *)out), PyArray_DATA((PyArrayObject *)nrel_arr),
                            PyArray_DATA((PyArrayObject *)nret_arr), 0};
    }
    Py_BEGIN_ALLOW_THREADS run_parallel(measures_work, jobs, sizeof(MeasJob), nt);
    Py_END_ALLOW_THREADS for (int t = 0; t < nt; t++) {
        if (jobs[t].nomem) {
            Py_DECREF(out);
            Py_DECREF(nrel_arr);
            Py_DECREF(nret_arr);
            return PyErr_NoMemory();
        }
    }
    return Py_BuildValue("(NNN)", out, nrel_arr, nret_arr);
}

/* scan_text(buffer) -> (offset of the first NUL byte or -1, whether any byte is >= 0x80): the cheap part of
 * the text checks, so that a plain ASCII file mapped from disk is never copied into a bytes object. */
static PyObject *py_scan_text(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    const unsigned char *s = buf.buf;
    Py_ssize_t n = buf.len, nul = -1;
    int high = 0;
    Py_BEGIN_ALLOW_THREADS const unsigned char *z = memchr(s, 0, (size_t)n);
    nul = z ? (Py_ssize_t)(z - s) : -1;
    uint64_t acc = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++) acc |= s[i];
    high = (acc & 0x8080808080808080ULL) != 0;
    Py_END_ALLOW_THREADS PyBuffer_Release(&buf);
    return Py_BuildValue("(nO)", nul, high ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"scan_text", py_scan_text, METH_VARARGS, "scan_text(buffer) -> (first NUL offset or -1, any byte >= 0x80)"},
    {"parse_trec", py_parse_trec, METH_VARARGS,
     "parse_trec(data, is_run, keep_first) -> (query_ids, (qoff, blob, doff, values))"},
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
    /* bumped with every change of the kernels' signatures or measure codes: ir/_bytes.py refuses a stale build */
    if (m && PyModule_AddIntConstant(m, "KERNEL_VERSION", 2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
