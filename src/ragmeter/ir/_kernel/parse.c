/* The general TREC parser: rows in any order (a query's lines may be spread over the file, repeated doc
 * ids reported or dropped). Tokenised on every core, then grouped by group.c. fastparse.c handles the
 * usual file (each query's lines together, no repeats) without the row table and falls back to this. */
#include "native.h"

typedef struct {
    const char *data, *start, *end;
    long line0;    /* lines before start */
    Row *rows;     /* this share's rows; rows[i].q holds the query id's length until interned */
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
    long lineno = job->line0;
    int64_t n = 0;
    job->err_line = 0;
    LineRow lr;
    int got;
    while ((got = next_row(&pos, end, job->is_run, &lr, &lineno, job->err, sizeof job->err)) > 0) {
        job->rows[n].doc = lr.doc - data;
        job->rows[n].len = lr.dlen;
        job->rows[n].q = lr.qlen;
        job->rows[n].v = lr.v;
        job->qtok[n] = lr.q - data;
        n++;
    }
    if (got < 0) {
        job->err_line = lineno;
        return NULL;
    }
    job->n = n;
    return NULL;
}

PyObject *parse_general(const char *data, Py_ssize_t len, int is_run, int keep_first) {
    int nt = n_threads(len / 40);
    /* shares of about equal bytes, cut after a newline; lines and row capacity per share */
    const char *cut[17];
    long lines[17];
    cut_shares(data, len, nt, cut);
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
        PyObject *names = interned_names(&qids);
        if (!names) {
            Py_DECREF(parts);
            goto out;
        }
        result = Py_BuildValue("(NN)", names, parts);
    }
out:
    free(rows);
    free(qtok);
    interner_free(&qids);
    return result;
}

/* parse_trec(data, is_run, keep_first, mapped=False): the in-place parser when the file suits it, else the
 * general one. mapped: data is a read-only file mapping, unchecked: its pages are dropped once read, and None
 * comes back when it is not plain ASCII text (NUL or bytes >= 0x80: the caller reads it with the full checks). */
PyObject *py_parse_trec(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int is_run, keep_first, mapped = 0;
    if (!PyArg_ParseTuple(args, "y*pp|p", &buf, &is_run, &keep_first, &mapped)) return NULL;
    PyObject *result = parse_fast(buf.buf, buf.len, is_run, mapped);
    if (!result && !PyErr_Occurred()) result = parse_general(buf.buf, buf.len, is_run, keep_first);
    PyBuffer_Release(&buf);
    return result;
}
