/* Matching every retrieved doc to its query's judgments: the grade of each run row. */
#include "native.h"

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
    while ((int64_t)nslots < 4 * J->maxg) nslots <<= 1;
    int32_t *slots = malloc(nslots * sizeof(int32_t));
    uint32_t *tags = malloc(nslots * sizeof(uint32_t)); /* high hash bits: most misses end without a memcmp */
    if (!slots || !tags) {
        free(slots);
        free(tags);
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
        while ((int64_t)mask < 4 * (hi - lo)) mask <<= 1;
        memset(slots, 0xff, mask * sizeof(int32_t));
        mask -= 1;
        for (int64_t y = lo; y < hi; y++) {
            uint64_t hv = hash_bytes(qb + qd[y], (size_t)(qd[y + 1] - qd[y])), h = hv & mask;
            while (slots[h] >= 0) h = (h + 1) & mask;
            slots[h] = (int32_t)(y - lo);
            tags[h] = (uint32_t)(hv >> 32);
        }
        for (int64_t x = ro[r]; x < ro[r + 1]; x++) {
            size_t len = (size_t)(rd[x + 1] - rd[x]);
            const char *s = rb + rd[x];
            uint64_t hv = hash_bytes(s, len), h = hv & mask;
            uint32_t tag = (uint32_t)(hv >> 32);
            int32_t grade = INT32_MIN;
            for (;;) {
                int32_t sl = slots[h];
                if (sl < 0) break;
                int64_t y = lo + sl;
                if (tags[h] == tag && (size_t)(qd[y + 1] - qd[y]) == len && memcmp(qb + qd[y], s, len) == 0) {
                    grade = qg[y];
                    break;
                }
                h = (h + 1) & mask;
            }
            g[x] = grade;
        }
    }
    free(slots);
    free(tags);
    return NULL;
}

PyObject *py_judge(PyObject *self, PyObject *args) {
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
    small_pages(g, (size_t)n * sizeof(int32_t));
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
