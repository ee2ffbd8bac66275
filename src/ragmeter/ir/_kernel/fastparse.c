/* The in-place TREC parser for the usual file: each query's lines together and no doc id twice in a query.
 *
 * Lines are counted first (module.c count_lines, which also checks a mapped file's text), so every core
 * tokenises its share of the text straight into the output columns at the rows they keep (no row table, no
 * permutation; a blank line leaves a gap closed when the shares are joined): doc ids into the blob (sized at
 * an upper bound: untouched pages cost no memory; trimmed), their ends into doff, values into their column;
 * a query's lines form one segment. Then query ids are interned (one per segment) and every query checked for
 * repeated doc ids and, for a run, for rank order (runs usually are in it: checked, sorted only when not).
 * A query met again later in the file or a repeated doc id sends the file to the general parser, whose
 * answers (the duplicate's message, keep_first) are the reference. For a file mapping, the pages are
 * dropped behind the tokeniser. */
#include "native.h"

#define RELEASE_STEP ((Py_ssize_t)4 << 20)

typedef struct {
    int64_t qa;   /* query id bytes at qa in the share's arena */
    int32_t qlen;
    int64_t row;  /* first row (share-local) */
} Seg;

typedef struct {
    const char *start, *end;
    int is_run, release;
    char *blob;     /* the share's doc id bytes, from blob[0] */
    int64_t *doff;  /* doff[i + 1]: end of row i's doc id (share-local) */
    double *vd;     /* run scores, or */
    int32_t *vi;    /* qrels grades, from the share's first row */
    int64_t n, nbytes;
    long lines;
    char *qa;
    int64_t qa_len, qa_cap;
    Seg *seg;
    int64_t nseg, seg_cap;
    long err_line;
    char err[256];
    int nomem;
} FastJob;

static int new_segment(FastJob *J, const LineRow *lr, int64_t row) {
    if (J->nseg == J->seg_cap) {
        J->seg_cap = J->seg_cap ? 2 * J->seg_cap : 4096;
        Seg *s = realloc(J->seg, (size_t)J->seg_cap * sizeof(Seg));
        if (!s) return -1;
        J->seg = s;
    }
    while (J->qa_len + lr->qlen > J->qa_cap) {
        J->qa_cap = J->qa_cap ? 2 * J->qa_cap : 65536;
        char *a = realloc(J->qa, (size_t)J->qa_cap);
        if (!a) return -1;
        J->qa = a;
    }
    memcpy(J->qa + J->qa_len, lr->q, (size_t)lr->qlen);
    J->seg[J->nseg++] = (Seg){J->qa_len, lr->qlen, row};
    J->qa_len += lr->qlen;
    return 0;
}

static void *fast_work(void *arg) {
    FastJob *J = arg;
    const char *pos = J->start, *end = J->end, *released = J->start;
    int64_t n = 0, bytes = 0;
    long lineno = 0;
    const Seg *last = NULL;
    LineRow lr;
    int got;
    while ((got = next_row(&pos, end, J->is_run, &lr, &lineno, J->err, sizeof J->err)) > 0) {
        if (!last || last->qlen != lr.qlen || memcmp(J->qa + last->qa, lr.q, (size_t)lr.qlen) != 0) {
            if (new_segment(J, &lr, n) < 0) {
                J->nomem = 1;
                return NULL;
            }
            last = &J->seg[J->nseg - 1];
        }
        memcpy(J->blob + bytes, lr.doc, (size_t)lr.dlen);
        bytes += lr.dlen;
        J->doff[n + 1] = bytes;
        if (J->vd)
            J->vd[n] = lr.v;
        else
            J->vi[n] = (int32_t)lr.v;
        n++;
        if (J->release && pos - released >= RELEASE_STEP) {
            release_pages(released, pos < end ? pos : end);
            released = pos;
        }
    }
    if (got < 0) {
        J->err_line = lineno;
        return NULL;
    }
    if (J->release) release_pages(released, end);
    J->n = n;
    J->nbytes = bytes;
    J->lines = lineno;
    return NULL;
}

typedef struct {
    char *blob;
    int64_t *doff;
    double *vd;
    const int64_t *qoff;
    int64_t q0, q1, maxg;
    int is_run, dup, nomem;
} RankJob;

typedef struct {
    const char *blob;
    const int64_t *doff;
    const double *vd;
} RankCtx;

static int cmp_local(const void *a, const void *b, void *vctx) {
    const RankCtx *c = vctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return rank_cmp(c->vd[x], c->blob + c->doff[x], (size_t)(c->doff[x + 1] - c->doff[x]), c->vd[y],
                    c->blob + c->doff[y], (size_t)(c->doff[y + 1] - c->doff[y]));
}

/* sort rows lo..hi-1 into rank order, moving their doc ids, ends and scores */
static int sort_query(RankJob *J, int64_t lo, int64_t hi, int32_t *perm, double *tv, int64_t *to) {
    int64_t g = hi - lo, b0 = J->doff[lo], nb = J->doff[hi] - b0;
    char *tb = malloc((size_t)(nb > 0 ? nb : 1));
    if (!tb) return -1;
    for (int64_t i = 0; i < g; i++) perm[i] = (int32_t)i;
    RankCtx ctx = {J->blob, J->doff + lo, J->vd + lo};
    if (g <= 512) { /* a run out of order is nearly sorted (ties in file order): insertion sort is linear */
        for (int64_t i = 1; i < g; i++) {
            int32_t x = perm[i];
            int64_t k = i;
            for (; k > 0 && cmp_local(&perm[k - 1], &x, &ctx) > 0; k--) perm[k] = perm[k - 1];
            perm[k] = x;
        }
    } else {
        qsort_r(perm, (size_t)g, sizeof(int32_t), cmp_local, &ctx);
    }
    memcpy(tb, J->blob + b0, (size_t)nb);
    memcpy(tv, J->vd + lo, (size_t)g * sizeof(double));
    memcpy(to, J->doff + lo, (size_t)(g + 1) * sizeof(int64_t));
    int64_t pos = b0;
    for (int64_t i = 0; i < g; i++) {
        int32_t p = perm[i];
        int64_t len = to[p + 1] - to[p];
        memcpy(J->blob + pos, tb + (to[p] - b0), (size_t)len);
        pos += len;
        J->doff[lo + i + 1] = pos;
        J->vd[lo + i] = tv[p];
    }
    free(tb);
    return 0;
}

/* queries q0..q1-1: any doc id twice (J->dup), else ranked in place (runs) */
static void *rank_work(void *arg) {
    RankJob *J = arg;
    size_t nslots = 16;
    while ((int64_t)nslots < 4 * J->maxg) nslots <<= 1;
    int32_t *slots = malloc(nslots * sizeof(int32_t));
    uint32_t *tags = malloc(nslots * sizeof(uint32_t)); /* high hash bits: a memcmp only when they agree */
    int32_t *perm = malloc((size_t)J->maxg * sizeof(int32_t) + 1);
    double *tv = malloc((size_t)J->maxg * sizeof(double) + 1);
    int64_t *to = malloc((size_t)(J->maxg + 1) * sizeof(int64_t));
    const char *blob = J->blob;
    const int64_t *doff = J->doff;
    if (!slots || !tags || !perm || !tv || !to) {
        J->nomem = 1;
        goto out;
    }
    for (int64_t q = J->q0; q < J->q1 && !J->dup; q++) {
        int64_t lo = J->qoff[q], hi = J->qoff[q + 1];
        size_t mask = 16;
        while ((int64_t)mask < 4 * (hi - lo)) mask <<= 1;
        memset(slots, 0xff, mask * sizeof(int32_t));
        mask -= 1;
        for (int64_t j = lo; j < hi && !J->dup; j++) {
            size_t len = (size_t)(doff[j + 1] - doff[j]);
            uint64_t hv = hash_bytes(blob + doff[j], len), h = hv & mask;
            uint32_t tag = (uint32_t)(hv >> 32);
            for (;;) {
                int32_t s = slots[h];
                if (s < 0) {
                    slots[h] = (int32_t)(j - lo);
                    tags[h] = tag;
                    break;
                }
                int64_t y = lo + s;
                if (tags[h] == tag && (size_t)(doff[y + 1] - doff[y]) == len &&
                    memcmp(blob + doff[y], blob + doff[j], len) == 0) {
                    J->dup = 1;
                    break;
                }
                h = (h + 1) & mask;
            }
        }
        if (J->dup || !J->is_run) continue;
        int64_t j = lo + 1;
        while (j < hi && rank_cmp(J->vd[j - 1], blob + doff[j - 1], (size_t)(doff[j] - doff[j - 1]), J->vd[j],
                                  blob + doff[j], (size_t)(doff[j + 1] - doff[j])) < 0)
            j++;
        if (j < hi && sort_query(J, lo, hi, perm, tv, to) < 0) {
            J->nomem = 1;
            goto out;
        }
    }
out:
    free(slots);
    free(tags);
    free(perm);
    free(tv);
    free(to);
    return NULL;
}

static PyObject *trimmed(PyObject *arr, npy_intp n) {
    PyArray_Dims d = {&n, 1};
    PyObject *r = PyArray_Resize((PyArrayObject *)arr, &d, 0, NPY_CORDER); /* realloc: no copy */
    if (!r) {
        Py_DECREF(arr);
        return NULL;
    }
    Py_DECREF(r);
    return arr;
}

/* join the shares' columns after the first share's (moving down: every share starts at its upper bound) */
static void join_shares(FastJob *jobs, int nt, const int64_t *row0, const int64_t *bstart, char *blob, int64_t *doff,
                        char *vals, size_t vsize, int64_t *rstart) {
    int64_t N = 0, B = 0;
    for (int t = 0; t < nt; t++) {
        FastJob *J = &jobs[t];
        rstart[t] = N;
        if (B != bstart[t]) memmove(blob + B, blob + bstart[t], (size_t)J->nbytes);
        if (B != bstart[t] || N != row0[t])
            for (int64_t i = 0; i < J->n; i++) doff[N + i + 1] = doff[row0[t] + i + 1] + B;
        if (N != row0[t]) memmove(vals + (size_t)N * vsize, vals + (size_t)row0[t] * vsize, (size_t)J->n * vsize);
        N += J->n;
        B += J->nbytes;
    }
    rstart[nt] = N;
    rstart[nt + 1] = B;
}

/* intern the segments' query ids in file order into qids, qo[q] = first row of query q; -1 when a query
 * comes back after another one (not contiguous), -2 out of memory */
static int intern_segments(FastJob *jobs, int nt, const int64_t *rstart, Interner *qids, char *arena, int64_t *qo) {
    int64_t at = 0;
    int32_t last_q = -1;
    for (int t = 0; t < nt; t++) {
        memcpy(arena + at, jobs[t].qa, (size_t)jobs[t].qa_len);
        for (int64_t s = 0; s < jobs[t].nseg; s++) {
            const Seg *g = &jobs[t].seg[s];
            int32_t q = interner_find(qids, at + g->qa, g->qlen);
            if (q >= 0) {
                if (q == last_q) continue; /* the query goes on across a share boundary */
                return -1;
            }
            q = intern(qids, at + g->qa, g->qlen);
            if (q < 0) return -2;
            qo[q] = rstart[t] + g->row;
            last_q = q;
        }
        at += jobs[t].qa_len;
    }
    qo[qids->n] = rstart[nt];
    return 0;
}

/* rank and check every query on every core: 1 a doc id repeated, 0 done, -1 out of memory */
static int rank_queries(char *blob, int64_t *doff, double *vd, const int64_t *qo, int64_t nq, int is_run) {
    int64_t maxg = 1;
    for (int64_t q = 0; q < nq; q++)
        if (qo[q + 1] - qo[q] > maxg) maxg = qo[q + 1] - qo[q];
    int nt = n_threads(qo[nq]);
    int64_t bounds[17];
    split_queries(qo, nq, nt, bounds);
    RankJob jobs[16];
    for (int t = 0; t < nt; t++) jobs[t] = (RankJob){blob, doff, vd, qo, bounds[t], bounds[t + 1], maxg, is_run, 0, 0};
    Py_BEGIN_ALLOW_THREADS run_parallel(rank_work, jobs, sizeof(RankJob), nt);
    Py_END_ALLOW_THREADS int dup = 0;
    for (int t = 0; t < nt; t++) {
        if (jobs[t].nomem) return -1;
        dup |= jobs[t].dup;
    }
    return dup;
}

PyObject *parse_fast(const char *data, Py_ssize_t len, int is_run, int mapped) {
    int nt = n_threads(len / 40);
    const char *cut[17];
    int64_t row0[17], bstart[17], rstart[18];
    cut_shares(data, len, nt, cut);
    if (count_lines(cut, nt, mapped, row0)) return Py_NewRef(Py_None); /* not plain ASCII: Python checks it */
    for (int t = 0; t < nt; t++) bstart[t] = cut[t] - data;
    PyObject *result = NULL, *blob = PyBytes_FromStringAndSize(NULL, len + 1);
    PyObject *doff = new_array(row0[nt] + 1, NPY_INT64), *vals = new_array(row0[nt], is_run ? NPY_FLOAT64 : NPY_INT32);
    FastJob jobs[16];
    memset(jobs, 0, sizeof jobs);
    Interner qids = {0};
    char *arena = NULL;
    int64_t *qo = NULL;
    if (!blob || !doff || !vals) goto fail;
    char *bp = PyBytes_AS_STRING(blob), *vp = PyArray_DATA((PyArrayObject *)vals);
    int64_t *dp = PyArray_DATA((PyArrayObject *)doff);
    size_t vsize = is_run ? sizeof(double) : sizeof(int32_t);
    small_pages(bp, (size_t)len);
    small_pages(dp, (size_t)(row0[nt] + 1) * sizeof(int64_t));
    small_pages(vp, (size_t)row0[nt] * vsize);
    dp[0] = 0;
    for (int t = 0; t < nt; t++) {
        FastJob *J = &jobs[t];
        J->start = cut[t], J->end = cut[t + 1], J->is_run = is_run, J->release = mapped;
        J->blob = bp + bstart[t], J->doff = dp + row0[t];
        if (is_run)
            J->vd = (double *)vp + row0[t];
        else
            J->vi = (int32_t *)vp + row0[t];
    }
    Py_BEGIN_ALLOW_THREADS run_parallel(fast_work, jobs, sizeof(FastJob), nt);
    Py_END_ALLOW_THREADS long line0 = 0;
    for (int t = 0; t < nt; t++) {
        if (jobs[t].err_line) { /* the first share with an error holds the file's first error */
            set_error(line0 + jobs[t].err_line, 0, "%s", jobs[t].err);
            goto fail;
        }
        if (jobs[t].nomem) goto nomem;
        line0 += jobs[t].lines;
    }
    join_shares(jobs, nt, row0, bstart, bp, dp, vp, vsize, rstart);
    int64_t nseg = 0, nqa = 0;
    for (int t = 0; t < nt; t++) nseg += jobs[t].nseg, nqa += jobs[t].qa_len;
    arena = malloc((size_t)nqa + 1);
    qo = malloc((size_t)(nseg + 1) * sizeof(int64_t));
    if (!arena || !qo || interner_init(&qids, arena) < 0) goto nomem;
    int got = intern_segments(jobs, nt, rstart, &qids, arena, qo);
    if (got == -1) goto fail; /* not contiguous: the general parser (no exception set) */
    if (got < 0) goto nomem;
    int64_t nq = (int64_t)qids.n, n = rstart[nt];
    got = rank_queries(bp, dp, is_run ? (double *)vp : NULL, qo, nq, is_run);
    if (got == 1) goto fail; /* a doc id twice in a query: the general parser says where, or keeps the first */
    if (got < 0) goto nomem;
    PyObject *qoff = new_array(nq + 1, NPY_INT64), *names = interned_names(&qids);
    if (!qoff || !names || _PyBytes_Resize(&blob, rstart[nt + 1]) < 0 || !(doff = trimmed(doff, n + 1)) ||
        !(vals = trimmed(vals, n))) {
        Py_XDECREF(qoff);
        Py_XDECREF(names);
        goto fail;
    }
    memcpy(PyArray_DATA((PyArrayObject *)qoff), qo, (size_t)(nq + 1) * sizeof(int64_t));
    result = Py_BuildValue("(N(NNNN))", names, qoff, blob, doff, vals);
    blob = doff = vals = NULL;
    goto done;
nomem:
    PyErr_NoMemory();
fail:
    Py_XDECREF(blob);
    Py_XDECREF(doff);
    Py_XDECREF(vals);
done:
    for (int t = 0; t < nt; t++) {
        free(jobs[t].qa);
        free(jobs[t].seg);
    }
    free(arena);
    free(qo);
    interner_free(&qids);
    return result;
}
