#!/usr/bin/env bash
# Installs and starts what the test-suite needs outside Python. Sourced by .ci/run.
set -euo pipefail
true
