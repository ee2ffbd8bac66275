"""Build the native IR ingestion kernel; everything else is in pyproject.toml."""

import numpy as np
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ragmeter.ir._native",
            sources=["src/ragmeter/ir/_native.c"],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O3", "-std=c11"],
        )
    ]
)
