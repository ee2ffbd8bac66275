from mmap import mmap
from typing import Any

import numpy as np
import numpy.typing as npt

KERNEL_VERSION: int

_I64 = npt.NDArray[np.int64]
_I32 = npt.NDArray[np.int32]
_F64 = npt.NDArray[np.float64]

def parse_trec(
    data: bytes | mmap, is_run: bool, keep_first: bool, mapped: bool = False, /
) -> tuple[list[str], tuple[_I64, bytes, _I64, Any]] | None: ...
def canonicalize(
    qidx: _I32, blob: bytes, doff: _I64, values: _F64, nq: int, is_run: bool, keep_first: bool, /
) -> tuple[_I64, bytes, _I64, Any]: ...
def judge(
    run_qoff: _I64,
    run_blob: bytes,
    run_doff: _I64,
    run_to_qrels: _I32,
    qrels_qoff: _I64,
    qrels_blob: bytes,
    qrels_doff: _I64,
    qrels_grade: _I32,
    /,
) -> _I32: ...
def measures(
    run_qoff: _I64,
    grades: _I32,
    qrels_qoff: _I64,
    qrels_grade: _I32,
    q2r: _I32,
    codes: _I32,
    ks: _I64,
    betas: _F64,
    colls: _F64,
    level: int,
    /,
) -> tuple[_F64, _I64, _I64]: ...
