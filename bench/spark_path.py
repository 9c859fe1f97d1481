"""Print the site-packages of bench/.venvs/spark (pyspark and py4j; made from bench/peers/spark.txt on first
use): what `make test-spark` and bench/engines.py put on PYTHONPATH for Spark, never installed into the
project's environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import peer_python


def spark_site_packages() -> str:
    python = peer_python("spark")
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return found.stdout.strip()


if __name__ == "__main__":
    print(spark_site_packages())
