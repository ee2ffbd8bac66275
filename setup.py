"""Build the native IR kernel (one extension from the C files in src/ragmeter/ir/_kernel); everything else is
in pyproject.toml."""

from pathlib import Path

import numpy as np
from setuptools import Extension, setup

KERNEL = Path("src/ragmeter/ir/_kernel")

setup(
    ext_modules=[
        Extension(
            "ragmeter.ir._native",
            sources=sorted(str(p) for p in KERNEL.glob("*.c")),
            depends=sorted(str(p) for p in KERNEL.glob("*.h")),
            include_dirs=[np.get_include()],
            extra_compile_args=["-O3", "-std=c11", "-fvisibility=hidden"],
        )
    ]
)
