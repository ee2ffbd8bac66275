/* Grouping rows by query, de-duplicating doc ids within a query and ranking run queries, for rows in any
 * order (parse.c's rows and canonicalize's columns). */
#include "native.h"

typedef struct {
    const char *base;
    const Row *rows;
} SortCtx;

static int cmp_rank(const void *a, const void *b, void *vctx) {
    const SortCtx *ctx = vctx;
    const Row *x = &ctx->rows[*(const int64_t *)a];
    const Row *y = &ctx->rows[*(const int64_t *)b];
    return rank_cmp(x->v, ctx->base + x->doc, (size_t)x->len, y->v, ctx->base + y->doc, (size_t)y->len);
}

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

/*
 * Group rows by query (stable), drop or reject duplicate doc ids within a query, sort run groups
 * into rank order, and emit the columnar layout. On a duplicate with keep_first == 0, raises
 * ValueError(("duplicate", row, first_row, message)) with 0-based row indices.
 */
PyObject *finish(const char *base, Row *rows, int64_t n, int64_t nq, int is_run, int keep_first) {
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

/* canonicalize(qidx int32[n], blob bytes, doff int64[n+1], values float64[n], nq, is_run, keep_first) */
PyObject *py_canonicalize(PyObject *self, PyObject *args) {
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
