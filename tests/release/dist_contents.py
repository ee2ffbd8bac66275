"""What a built wheel and sdist must carry, checked against the source tree (used by .ci/package_smoke.sh).

The required files are read from src/ragmeter, not listed here: every module and every data file of the
package (templates, static files, demo data, migrations, type stubs) must be in the wheel, plus the compiled
IR kernel; the sdist must carry the same files, the kernel's C sources and what builds them. A named group
that matches nothing in the source tree is an error too, so a moved folder cannot make the check vacuous.

    python tests/release/dist_contents.py --src src --wheel dist/X.whl --sdist dist/X.tar.gz
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "ragmeter"
# Groups a user would miss first, each of which must match at least one file (package-relative globs).
GROUPS = {
    "report templates": "report/templates/*",
    "viewer templates": "view/templates/*",
    "viewer static files": "view/static/*",
    "demo data": "datasets/demo/*",
    "store migrations": "store/migrations/*",
    "type marker": "py.typed",
}
KERNEL_SOURCES = "ir/_kernel/*"  # C sources and headers: required in the sdist, not in the wheel
COMPILED_KERNEL = re.compile(r"^ir/_native\.[^/]*(\.so|\.pyd)$")
SDIST_ROOT_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CHANGELOG.md")
SDIST_EXAMPLES = ("examples/demo.qrels", "examples/demo.run")


def source_files(src: Path) -> list[str]:
    """The package's files as package-relative paths, without build products and caches."""
    root = src / PACKAGE
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or "__pycache__" in rel.split("/") or path.suffix in (".pyc", ".so", ".pyd"):
            continue
        out.append(rel)
    return sorted(out)


def _grouped(files: Iterable[str], pattern: str) -> list[str]:
    return [f for f in files if fnmatch.fnmatch(f, pattern)]


def wheel_problems(wheel_names: Iterable[str], sources: list[str], version: str) -> list[str]:
    """One line per problem of a wheel whose archive holds `wheel_names`; empty when it is complete."""
    names = set(wheel_names)
    inside = {n[len(PACKAGE) + 1 :] for n in names if n.startswith(PACKAGE + "/")}
    problems = []
    for group, pattern in GROUPS.items():
        expected = _grouped(sources, pattern)
        if not expected:
            problems.append(f"the source tree has no {group} ({PACKAGE}/{pattern}): the check is out of date")
            continue
        missing = [f for f in expected if f not in inside]
        if missing:
            problems.append(f"wheel lacks {group}: " + ", ".join(f"{PACKAGE}/{f}" for f in missing))
    grouped = {f for pattern in GROUPS.values() for f in _grouped(sources, pattern)}
    kernel_sources = set(_grouped(sources, KERNEL_SOURCES))
    rest = [f for f in sources if f not in grouped and f not in kernel_sources and f not in inside]
    if rest:
        problems.append("wheel lacks package files: " + ", ".join(f"{PACKAGE}/{f}" for f in rest))
    if not any(COMPILED_KERNEL.match(f) for f in inside):
        problems.append(f"wheel lacks the compiled IR kernel ({PACKAGE}/ir/_native.*.so)")
    dist_info = f"{PACKAGE}-{version}.dist-info"
    for meta in ("METADATA", "entry_points.txt", "RECORD"):
        if f"{dist_info}/{meta}" not in names:
            problems.append(f"wheel lacks {dist_info}/{meta} (is the version {version}?)")
    return problems


def sdist_problems(sdist_names: Iterable[str], sources: list[str], version: str) -> list[str]:
    """One line per problem of an sdist whose archive holds `sdist_names`; empty when it is complete."""
    top = f"{PACKAGE}-{version}/"
    names = {n[len(top) :] for n in sdist_names if n.startswith(top)}
    problems = []
    kernel = _grouped(sources, KERNEL_SOURCES)
    if not any(f.endswith(".c") for f in kernel) or not any(f.endswith(".h") for f in kernel):
        problems.append(f"the source tree has no kernel C sources ({PACKAGE}/{KERNEL_SOURCES})")
    missing = [f"src/{PACKAGE}/{f}" for f in sources if f"src/{PACKAGE}/{f}" not in names]
    kernel_missing = [m for m in missing if fnmatch.fnmatch(m, f"src/{PACKAGE}/{KERNEL_SOURCES}")]
    if kernel_missing:
        problems.append("sdist lacks the kernel's C sources: " + ", ".join(kernel_missing))
    other = [m for m in missing if m not in kernel_missing]
    if other:
        problems.append("sdist lacks package files: " + ", ".join(other))
    for f in (*SDIST_ROOT_FILES, *SDIST_EXAMPLES, "PKG-INFO"):
        if f not in names:
            problems.append(f"sdist lacks {f} (under {top})")
    return problems


def _version(src: Path) -> str:
    text = (src / PACKAGE / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if found is None:
        raise SystemExit(f'{src / PACKAGE / "_version.py"}: no __version__ = "X.Y.Z" line')
    return found.group(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, default=Path("src"))
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--sdist", type=Path)
    args = parser.parse_args(argv)
    sources = source_files(args.src)
    version = _version(args.src)
    problems = []
    if args.wheel is not None:
        with zipfile.ZipFile(args.wheel) as zf:
            problems += [f"{args.wheel.name}: {p}" for p in wheel_problems(zf.namelist(), sources, version)]
    if args.sdist is not None:
        with tarfile.open(args.sdist) as tf:
            problems += [f"{args.sdist.name}: {p}" for p in sdist_problems(tf.getnames(), sources, version)]
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        checked = " and ".join(p.name for p in (args.wheel, args.sdist) if p is not None)
        print(f"{checked}: every package file of {len(sources)} is there, with the kernel")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
