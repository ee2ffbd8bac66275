/* The measures: every requested measure of every query, from the grades of its ranked rows. */
#include "native.h"

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

PyObject *py_measures(PyObject *self, PyObject *args) {
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
