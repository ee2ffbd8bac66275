"""The artefact check of .ci/package_smoke.sh: complete file lists pass, and a wheel without its templates,
static files, demo data or compiled kernel, or an sdist without the kernel's C sources, fails it, naming
what is missing. The lists are made from this checkout's src/ragmeter as the build lays them out."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest
from dist_contents import main, sdist_problems, source_files, wheel_problems

from ragmeter._version import __version__

SRC = Path(__file__).resolve().parents[2] / "src"
SOURCES = source_files(SRC)
KERNEL_SO = "ragmeter/ir/_native.cpython-311-x86_64-linux-gnu.so"
DIST_INFO = [f"ragmeter-{__version__}.dist-info/{f}" for f in ("METADATA", "entry_points.txt", "RECORD")]
SDIST_TOP = [
    "pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CHANGELOG.md", "PKG-INFO",
    "examples/demo.qrels", "examples/demo.run",
]  # fmt: skip


def wheel_list(drop: str = "") -> list[str]:
    names = [f"ragmeter/{f}" for f in SOURCES] + [KERNEL_SO, *DIST_INFO]
    return [n for n in names if not (drop and n.startswith(drop))]


def sdist_list(drop: str = "") -> list[str]:
    top = f"ragmeter-{__version__}/"
    names = [f"{top}src/ragmeter/{f}" for f in SOURCES] + [top + f for f in SDIST_TOP]
    return [n for n in names if not (drop and n.startswith(top + drop))]


def test_the_source_tree_has_what_the_check_names() -> None:
    for folder in ("report/templates", "view/templates", "view/static", "datasets/demo", "ir/_kernel"):
        assert any(f.startswith(folder + "/") for f in SOURCES), folder
    assert not any(f.endswith((".so", ".pyc")) or "__pycache__" in f for f in SOURCES)


def test_complete_lists_pass() -> None:
    assert wheel_problems(wheel_list(), SOURCES, __version__) == []
    assert sdist_problems(sdist_list(), SOURCES, __version__) == []


@pytest.mark.parametrize(
    ("drop", "group"),
    [
        ("ragmeter/view/templates/", "viewer templates"),
        ("ragmeter/report/templates/", "report templates"),
        ("ragmeter/view/static/", "viewer static files"),
        ("ragmeter/datasets/demo/", "demo data"),
        ("ragmeter/store/migrations/", "store migrations"),
    ],
)
def test_a_wheel_without_a_data_folder_fails(drop: str, group: str) -> None:
    problems = wheel_problems(wheel_list(drop), SOURCES, __version__)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"wheel lacks {group}: ")
    expected = [f"ragmeter/{f}" for f in SOURCES if f"ragmeter/{f}".startswith(drop)]
    assert expected and all(name in problems[0] for name in expected)


def test_a_wheel_without_one_template_or_module_fails() -> None:
    names = wheel_list()
    names.remove("ragmeter/view/templates/base.html.j2")
    names.remove("ragmeter/_version.py")
    problems = wheel_problems(names, SOURCES, __version__)
    assert problems == [
        "wheel lacks viewer templates: ragmeter/view/templates/base.html.j2",
        "wheel lacks package files: ragmeter/_version.py",
    ]


def test_a_wheel_without_the_compiled_kernel_fails() -> None:
    problems = wheel_problems(wheel_list(KERNEL_SO), SOURCES, __version__)
    assert problems == ["wheel lacks the compiled IR kernel (ragmeter/ir/_native.*.so)"]


def test_a_wheel_of_another_version_fails() -> None:
    assert any("dist-info/METADATA" in p for p in wheel_problems(wheel_list(), SOURCES, "9.9.9"))


def test_an_sdist_without_the_kernel_sources_fails() -> None:
    problems = sdist_problems(sdist_list("src/ragmeter/ir/_kernel/"), SOURCES, __version__)
    assert len(problems) == 1 and problems[0].startswith("sdist lacks the kernel's C sources: ")
    assert "src/ragmeter/ir/_kernel/module.c" in problems[0]
    assert "src/ragmeter/ir/_kernel/native.h" in problems[0]


def test_an_sdist_without_setup_py_or_examples_fails() -> None:
    problems = sdist_problems(sdist_list("setup.py"), SOURCES, __version__)
    assert problems == [f"sdist lacks setup.py (under ragmeter-{__version__}/)"]
    assert sdist_problems(sdist_list("examples/"), SOURCES, __version__) == [
        f"sdist lacks examples/demo.qrels (under ragmeter-{__version__}/)",
        f"sdist lacks examples/demo.run (under ragmeter-{__version__}/)",
    ]


def test_a_source_tree_without_templates_makes_the_check_fail_not_pass() -> None:
    """A moved folder must not make the check vacuous: a group that matches nothing is an error."""
    sources = [f for f in SOURCES if not f.startswith("view/templates/")]
    problems = wheel_problems(wheel_list(), sources, __version__)
    assert problems == [
        "the source tree has no viewer templates (ragmeter/view/templates/*): the check is out of date"
    ]


def _write_wheel(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "")
    return path


def _write_sdist(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name in names:
            tf.addfile(tarfile.TarInfo(name))
    return path


def test_the_script_fails_on_a_doctored_wheel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whl = f"ragmeter-{__version__}-cp311-cp311-linux_x86_64.whl"
    (tmp_path / "good").mkdir()
    good = _write_wheel(tmp_path / "good" / whl, wheel_list())
    sdist = _write_sdist(tmp_path / f"ragmeter-{__version__}.tar.gz", sdist_list())
    assert main(["--src", str(SRC), "--wheel", str(good), "--sdist", str(sdist)]) == 0
    assert "every package file" in capsys.readouterr().out

    (tmp_path / "doctored").mkdir()
    doctored = _write_wheel(tmp_path / "doctored" / whl, wheel_list("ragmeter/view/templates/"))
    assert main(["--src", str(SRC), "--wheel", str(doctored)]) == 1
    err = capsys.readouterr().err
    assert f"{whl}: wheel lacks viewer templates: " in err
    assert "ragmeter/view/templates/base.html.j2" in err and "ragmeter/view/templates/run.html.j2" in err
