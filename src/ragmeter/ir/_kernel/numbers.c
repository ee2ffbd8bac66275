/* Tokenising one TREC line, exact number parsing, and the interning of query ids. */
#include "native.h"

/* ---------------- number parsing ---------------- */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Exact (correctly rounded) parse of a decimal token; 0 ok, -1 not a number, -2 infinite (or overflows). */
int parse_double(const char *s, size_t n, double *out) {
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

int parse_grade(const char *s, size_t n, double *out) {
    double d;
    if (parse_double(s, n, &d) != 0 || d != floor(d) || fabs(d) > 2147483647.0) return -1;
    *out = d;
    return 0;
}

/* ---------------- one line ---------------- */
#define MAXTOK 8
/* ' ', \t, \v, \f, \r: the separators of a line (class 1); \n ends it (class 2). Other control characters are
 * kept in ids, as trec_eval does (NUL bytes are refused before parsing: C strings would cut the id there);
 * whoever prints an id escapes them. */
static const unsigned char CLS[256] = {[' '] = 1, ['\t'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1, ['\n'] = 2};
#define CLASS(c) (CLS[(unsigned char)(c)])

/* the columns of a line that has nt tokens: 1 a row, -1 an error described in err */
static int check_line(const char **tok, const size_t *tlen, int nt, int is_run, LineRow *row, char *err, size_t errsz) {
    int ncols = is_run ? 6 : 4, vcol = is_run ? 4 : 3;
    if (nt != ncols) {
        snprintf(err, errsz, "expected %d whitespace-separated columns (%s), found %d", ncols,
                 is_run ? "query Q0 doc rank score tag" : "query iteration doc grade", nt);
        return -1;
    }
    if (tlen[2] > 100000) {
        snprintf(err, errsz, "document id longer than 100000 bytes");
        return -1;
    }
    int bad = is_run ? parse_double(tok[vcol], tlen[vcol], &row->v) : parse_grade(tok[vcol], tlen[vcol], &row->v);
    if (bad) {
        snprintf(err, errsz,
                 !is_run     ? "grade '%.*s' is not an integer"
                 : bad == -2 ? "score '%.*s' is not a finite number"
                             : "score '%.*s' is not a number",
                 (int)(tlen[vcol] > 40 ? 40 : tlen[vcol]), tok[vcol]);
        return -1;
    }
    row->q = tok[0];
    row->qlen = (int32_t)tlen[0];
    row->doc = tok[2];
    row->dlen = (int32_t)tlen[2];
    return 1;
}

/* the tokens of the line at *pp (nt; *pp left at its newline or at end). bounded = 0 when a newline is known to
 * come before end: the loops then stop on the newline alone (one compare per byte less); inlined twice. */
static inline int line_tokens(const char **pp, const char *end, int bounded, const char **tok, size_t *tlen) {
    const char *p = *pp;
    int nt = 0;
    for (;;) {
        while ((!bounded || p < end) && CLASS(*p) == 1) p++;
        if ((bounded && p >= end) || *p == '\n') break;
        const char *s = p;
        while ((!bounded || p < end) && CLASS(*p) == 0) p++;
        if (nt < MAXTOK) {
            tok[nt] = s;
            tlen[nt] = (size_t)(p - s);
        }
        nt++;
    }
    *pp = p;
    return nt;
}

/* one pass over the bytes: tokens and the line's end found together */
int next_row(const char **pos, const char *end, int is_run, LineRow *row, long *lineno, char *err, size_t errsz) {
    const char *p = *pos;
    int ends_in_newline = end > p && end[-1] == '\n';
    while (p < end) {
        const char *tok[MAXTOK];
        size_t tlen[MAXTOK];
        ++*lineno;
        int nt = ends_in_newline ? line_tokens(&p, end, 0, tok, tlen) : line_tokens(&p, end, 1, tok, tlen);
        if (p < end) p++; /* past the newline */
        if (nt == 0) continue;
        *pos = p;
        return check_line(tok, tlen, nt, is_run, row, err, errsz);
    }
    *pos = p;
    return 0;
}

/* ---------------- query-id interning (grows) ---------------- */
int interner_init(Interner *t, const char *base) {
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

void interner_free(Interner *t) {
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
int32_t intern(Interner *t, int64_t off, int32_t len) {
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

/* the index of an interned id, or -1 */
int32_t interner_find(const Interner *t, int64_t off, int32_t len) {
    const char *s = t->base + off;
    uint64_t h = hash_bytes(s, (size_t)len) & (t->nslots - 1);
    for (;;) {
        int32_t i = t->slots[h];
        if (i < 0) return -1;
        if (t->len[i] == len && memcmp(t->base + t->off[i], s, (size_t)len) == 0) return i;
        h = (h + 1) & (t->nslots - 1);
    }
}

/* the interned ids as a list of str (UTF-8, undecodable bytes kept as surrogates) */
PyObject *interned_names(const Interner *t) {
    PyObject *names = PyList_New((Py_ssize_t)t->n);
    if (!names) return NULL;
    for (size_t i = 0; i < t->n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(t->base + t->off[i], t->len[i], "surrogateescape");
        if (!s) {
            Py_DECREF(names);
            return NULL;
        }
        PyList_SET_ITEM(names, (Py_ssize_t)i, s);
    }
    return names;
}
