"""A measure's code is its family's position in ir.measures.FAMILIES, which must be the kernel's enum order."""

from __future__ import annotations

import re
from pathlib import Path

import ragmeter.ir.measures as measures
from ragmeter.ir.measures import FAMILIES, parse_measure

KERNEL = Path(measures.__file__).with_name("_kernel") / "measures.c"


def test_families_follow_the_kernel_enum() -> None:
    enum = re.search(r"enum \{([^}]*)\}", KERNEL.read_text(encoding="utf-8"))
    assert enum is not None
    names = [part.split("=")[0].strip().removeprefix("M_") for part in enum.group(1).split(",")]
    assert len(names) == len(FAMILIES)
    assert [getattr(measures, name) for name in names] == list(range(len(FAMILIES)))
    # the Python constant names the family at that code (P is precision)
    for name, family in zip(names, FAMILIES, strict=True):
        assert family.replace("precision", "p").replace("_", "") == name.lower().replace("_", "")


def test_parsed_measures_carry_their_family_code() -> None:
    assert parse_measure("P_5").code == measures.P
    assert parse_measure("ndcg_exp@10").code == measures.NDCG_EXP
    assert parse_measure("aqwv@5").code == measures.AQWV
    assert parse_measure("judged@10").code == FAMILIES.index("judged")
