"""Pure-numpy reference of the native kernels (same signatures as ``_native``).

Slower, written for clarity; the tests hold ``_native`` equal to it, and both to pytrec_eval.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
UNJUDGED = np.iinfo(np.int32).min


def _split(data: bytes) -> list[tuple[int, list[bytes]]]:
    rows = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        toks = line.split()  # ASCII whitespace, as the native tokenizer
        if toks:
            rows.append((lineno, toks))
    return rows


def parse_trec(data: bytes, is_run: bool, keep_first: bool) -> tuple[list[str], tuple[Any, ...]]:
    ncols, vcol = (6, 4) if is_run else (4, 3)
    order: dict[bytes, int] = {}
    qidx: list[int] = []
    docs: list[bytes] = []
    vals: list[float] = []
    for lineno, toks in _split(data):
        if len(toks) != ncols:
            raise ValueError("input", lineno, 0, f"expected {ncols} columns, found {len(toks)}")
        try:
            v = float(toks[vcol])
        except ValueError:
            raise ValueError("input", lineno, 0, "not a number") from None
        if np.isnan(v) or (not is_run and v != int(v)):
            raise ValueError("input", lineno, 0, "bad value")
        qidx.append(order.setdefault(toks[0], len(order)))
        docs.append(toks[2])
        vals.append(v)
    parts = canonicalize_lists(
        np.array(qidx, dtype=np.int32), docs, np.array(vals), len(order), is_run, keep_first
    )
    return [q.decode("utf-8", "surrogateescape") for q in order], parts


def canonicalize_lists(
    qidx: I32, docs: list[bytes], vals: F64, nq: int, is_run: bool, keep_first: bool
) -> tuple[I64, bytes, I64, Any]:
    n = len(docs)
    dcode = (
        np.unique(np.array(docs, dtype=object), return_inverse=True)[1].astype(np.int64)
        if n
        else np.zeros(0, np.int64)
    )
    # duplicates: stable sort by (query, doc) keeps file order inside equal keys
    by_key = np.lexsort((dcode, qidx)) if n else np.zeros(0, np.int64)
    same = np.zeros(n, dtype=bool)
    if n > 1:
        same[by_key[1:]] = (qidx[by_key[1:]] == qidx[by_key[:-1]]) & (dcode[by_key[1:]] == dcode[by_key[:-1]])
    if same.any() and not keep_first:
        at = int(np.flatnonzero(same[by_key])[0])
        later, first = int(by_key[at]), int(by_key[at - 1])
        raise ValueError("duplicate", later, first, docs[later])
    keep = ~same
    idx = np.flatnonzero(keep)
    if is_run:
        s32 = vals[idx].astype(np.float32)
        order = idx[np.lexsort((-dcode[idx], -s32, qidx[idx]))]
    else:
        order = idx[np.argsort(qidx[idx], kind="stable")]
    counts = np.bincount(qidx[order], minlength=nq)
    qoff = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(counts, out=qoff[1:])
    kept_docs = [docs[i] for i in order.tolist()]
    doff = np.zeros(len(kept_docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in kept_docs], out=doff[1:])
    values = vals[order] if is_run else vals[order].astype(np.int32)
    return qoff, b"".join(kept_docs), doff, values


def canonicalize(
    qidx: I32, blob: bytes, doff: I64, vals: F64, nq: int, is_run: bool, keep_first: bool
) -> tuple[I64, bytes, I64, Any]:
    return canonicalize_lists(qidx, _docs(blob, doff), vals, nq, is_run, keep_first)


def _docs(blob: bytes, off: I64) -> list[bytes]:
    o = off.tolist()
    return [blob[a:b] for a, b in pairwise(o)]


def judge(
    run_qoff: I64,
    run_blob: bytes,
    run_doff: I64,
    run_to_qrels: I32,
    qrels_qoff: I64,
    qrels_blob: bytes,
    qrels_doff: I64,
    qrels_grade: I32,
) -> I32:
    rdocs, qdocs = _docs(run_blob, run_doff), _docs(qrels_blob, qrels_doff)
    vocab, codes = np.unique(np.array(rdocs + qdocs, dtype=object), return_inverse=True)
    v = max(len(vocab), 1)
    rcode, qcode = codes[: len(rdocs)].astype(np.int64), codes[len(rdocs) :].astype(np.int64)
    rq = np.repeat(run_to_qrels.astype(np.int64), np.diff(run_qoff))
    qq = np.repeat(np.arange(len(qrels_qoff) - 1, dtype=np.int64), np.diff(qrels_qoff))
    qkey = qq * v + qcode
    order = np.argsort(qkey)
    rkey = rq * v + rcode
    pos = np.searchsorted(qkey[order], rkey)
    pos_c = np.minimum(pos, max(len(qkey) - 1, 0))
    hit = (rq >= 0) & (len(qkey) > 0)
    if len(qkey):
        hit &= qkey[order][pos_c] == rkey
    out = np.full(len(rdocs), UNJUDGED, dtype=np.int32)
    if len(qkey):
        out[hit] = qrels_grade[order][pos_c[hit]]
    return out


def measures(
    run_qoff: I64,
    grades: I32,
    qrels_qoff: I64,
    qrels_grade: I32,
    q2r: I32,
    codes: I32,
    ks: I64,
    betas: F64,
    colls: F64,
    level: int,
) -> tuple[F64, I64, I64]:
    nq = len(q2r)
    qq = np.repeat(np.arange(nq), np.diff(qrels_qoff))
    num_rel = np.bincount(qq[qrels_grade >= level], minlength=nq).astype(np.int64)
    judged_nonrel = (qrels_grade >= 0) & (qrels_grade < level)
    num_nonrel = np.bincount(qq[judged_nonrel], minlength=nq).astype(np.int64)
    # the evaluated rows: each qrels query's run slice, concatenated (rank order kept)
    present = q2r >= 0
    counts = np.append(np.diff(run_qoff), 0)  # a trailing empty slot for absent queries
    starts = np.append(run_qoff[:-1], 0)
    rsafe = np.where(present, q2r, len(counts) - 1)
    n_j = counts[rsafe].astype(np.int64)
    eidx = np.repeat(np.arange(nq), n_j)
    seg = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(n_j, out=seg[1:])
    within = np.arange(int(seg[-1]), dtype=np.int64) - np.repeat(seg[:-1], n_j)
    g = grades[np.repeat(starts[rsafe], n_j) + within].astype(np.int64)
    rel = g >= level
    relf = rel.astype(np.float64)
    cum = np.cumsum(relf)
    cum_before = np.concatenate([[0.0], cum])[seg[:-1]]
    cumrel = cum - np.repeat(cum_before, n_j)
    disc = 1.0 / np.log2(within + 2.0)

    def before(flags: npt.NDArray[np.bool_]) -> F64:  # count of flagged rows above each row, in its query
        c = np.cumsum(flags.astype(np.float64))
        out: F64 = c - flags - np.repeat(np.concatenate([[0.0], c])[seg[:-1]], n_j)
        return out

    judged = g >= 0
    pooled_unjudged = (g < 0) & (g != UNJUDGED)  # a negative grade in the qrels; UNJUDGED = not in the qrels
    nonrel_before = before(judged & ~rel)
    # ideal ranking from every positive grade of the qrels
    qg = qrels_grade.astype(np.int64)
    pos_rows = qg > 0
    ideal_order = np.lexsort((-qg[pos_rows], qq[pos_rows]))
    iq = qq[pos_rows][ideal_order]
    ig = qg[pos_rows][ideal_order]
    icount = np.bincount(iq, minlength=nq)
    istart = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(icount, out=istart[1:])
    iwithin = np.arange(len(ig)) - np.repeat(istart[:-1], icount)
    idisc = 1.0 / np.log2(iwithin + 2.0)
    safe_rel = np.maximum(num_rel, 1)

    out = np.zeros((len(codes), nq))
    v: npt.NDArray[Any]
    for mi in range(len(codes)):  # one vectorised pass per measure
        code, k = int(codes[mi]), int(ks[mi])
        in_k = within < k if k > 0 else np.ones(len(within), dtype=bool)
        relret = np.bincount(eidx[rel & in_k], minlength=nq).astype(np.float64)
        if code == 0:
            v = relret / k
        elif code == 1:
            v = np.where(num_rel > 0, relret / safe_rel, 0.0)
        elif code in (2, 3):
            gain = np.where(g > 0, g, 0).astype(np.float64)
            igain = ig.astype(np.float64)
            if code == 3:
                gain = np.where(g > 0, np.exp2(np.maximum(g, 0).astype(np.float64)) - 1.0, 0.0)
                igain = np.exp2(igain) - 1.0
            dcg = np.bincount(eidx[in_k], weights=(gain * disc)[in_k], minlength=nq)
            ik = iwithin < k if k > 0 else np.ones(len(iwithin), dtype=bool)
            idcg = np.bincount(iq[ik], weights=(igain * idisc)[ik], minlength=nq)
            v = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)
        elif code == 4:
            first = rel & (cumrel == 1) & in_k
            v = np.bincount(eidx[first], weights=1.0 / (within[first] + 1.0), minlength=nq)
        elif code == 5:
            sel = rel & in_k
            s = np.bincount(eidx[sel], weights=cumrel[sel] / (within[sel] + 1.0), minlength=nq)
            v = np.where(num_rel > 0, s / safe_rel, 0.0)
        elif code == 6:
            v = (relret > 0).astype(np.float64)
        elif code == 7:
            sel = rel & (within < num_rel[eidx])
            v = np.where(num_rel > 0, np.bincount(eidx[sel], minlength=nq) / safe_rel, 0.0)
        elif code == 8:
            lim = np.minimum(n_j, k).astype(np.float64)
            pmiss = np.where(num_rel > 0, (num_rel - relret) / safe_rel, 0.0)
            if colls[mi] > 0:
                denom = colls[mi] - num_rel
                pfa = np.where(denom > 0, (lim - relret) / np.where(denom > 0, denom, 1.0), 0.0)
            else:
                pfa = np.where(lim > 0, (lim - relret) / np.maximum(lim, 1.0), 0.0)
            v = 1.0 - pmiss - betas[mi] * pfa
        elif code == 9:  # bpref (trec_eval m_bpref.c)
            cap = np.minimum(num_nonrel, num_rel)[eidx]
            a = np.minimum(nonrel_before, num_rel[eidx])
            term = np.where(nonrel_before > 0, 1.0 - a / np.maximum(cap, 1), 1.0)
            s = np.bincount(eidx[rel], weights=term[rel], minlength=nq)
            v = np.where(num_rel > 0, s / safe_rel, 0.0)
        elif code == 10:  # infAP (trec_eval m_infap.c)
            eps = 0.00001
            rb = cumrel[rel] - 1.0
            nb, ub = nonrel_before[rel], before(pooled_unjudged)[rel]
            fj = within[rel].astype(np.float64)
            safe_j = np.maximum(fj, 1.0)
            term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rb + nb + ub) / safe_j) * (
                (rb + eps) / (rb + nb + 2 * eps)
            )
            term = np.where(fj == 0, 1.0, term)
            s = np.bincount(eidx[rel], weights=term, minlength=nq)
            v = np.where(num_rel > 0, s / safe_rel, 0.0)
        elif code == 11:  # judged@k: judged docs in the top k / k
            v = np.bincount(eidx[judged & in_k], minlength=nq) / k
        else:
            raise ValueError(f"unknown measure code {code}")
        out[mi] = v
    return out, num_rel, n_j
