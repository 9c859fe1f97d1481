"""The object store behind an `ObjectLake` (`tracevals.lake.objects`): its filesystem and byte uploads.

`lake_filesystem(url)` is the one place that turns a lake's URL (`s3://bucket/prefix`, or any other URL
`pyarrow.fs.FileSystem.from_uri` takes: `gs://`, `hdfs://`, `file://`) into a `pyarrow.fs.FileSystem` and
the root path of the lake on it. S3 is configured the way AWS tools are:

| variable | meaning |
|---|---|
| `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` | another endpoint (MinIO, moto, Ceph …); `http://` means plain HTTP |
| `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` | the credentials (else the AWS chain) |
| `AWS_REGION`, else `AWS_DEFAULT_REGION` | the bucket's region |

Secrets are never printed and never written to the lake: errors name the lake, the endpoint and the
variables to set, not their values.

Object stores have no rename: a file is written whole to its final key in one upload (`put_file`;
readers never see a partial object, since an object appears only once its upload completes), and every
durability step of a writer that comes after a commit (the collector marking its log records committed,
compaction deleting its inputs) waits for that upload to succeed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from tracevals import env
from tracevals.lake.paths import LakeError

ENDPOINT_VARS = (env.AWS_ENDPOINT_URL_S3, env.AWS_ENDPOINT_URL)
REGION_VARS = (env.AWS_REGION, env.AWS_DEFAULT_REGION)
_CREDENTIAL_VARS = (env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN)
_ENV = (*ENDPOINT_VARS, *REGION_VARS, *_CREDENTIAL_VARS)


def lake_filesystem(url: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem that holds the lake at the URL `lake` and the lake's root on it (no trailing slash).

    `s3://bucket/prefix`: an `S3FileSystem` from
    the AWS_* variables (see the module) and `bucket/prefix`. Another URL: what
    `pyarrow.fs.FileSystem.from_uri` makes of it. An unknown scheme or an S3 URL without a bucket is a
    `LakeError` of one line. Instances are cached per lake and configuration (they hold connections)."""
    return _filesystem(url, tuple(os.environ.get(name) for name in _ENV))


@functools.lru_cache(maxsize=32)
def _filesystem(url: str, _config: tuple[str | None, ...]) -> tuple[pafs.FileSystem, str]:
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("s3", "s3a"):
        return _s3(url)
    try:
        fs, path = pafs.FileSystem.from_uri(url)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError) as exc:
        raise LakeError(
            f"lake {url!r}: cannot open a {scheme}:// URL ({_first_line(exc)}); use a directory or "
            "s3://bucket/prefix (or another URL pyarrow reads: gs://, hdfs://, file://)"
        ) from None
    return fs, path.rstrip("/")


def _s3(url: str) -> tuple[pafs.FileSystem, str]:
    parts = urlsplit(url)
    bucket, prefix = parts.netloc, parts.path.strip("/")
    if not bucket:
        raise LakeError(f"lake {url!r} names no bucket; write s3://BUCKET/prefix")
    options: dict[str, object] = {}
    endpoint = next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)), None)
    if endpoint:
        parsed = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise LakeError(f"{_endpoint_var()}={endpoint!r} is not an http(s) URL; set it like http://127.0.0.1:9000")
        options["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
        options["scheme"] = parsed.scheme
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if bool(key) != bool(secret):
        missing = "AWS_SECRET_ACCESS_KEY" if key else "AWS_ACCESS_KEY_ID"
        raise LakeError(f"lake {url!r}: {missing} is not set (both AWS_ACCESS_KEY_ID and it are needed)")
    if key and secret:
        options["access_key"], options["secret_key"] = key, secret
        if os.environ.get("AWS_SESSION_TOKEN"):
            options["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    region = next((os.environ[v] for v in REGION_VARS if os.environ.get(v)), None)
    if region:
        options["region"] = region
    elif endpoint:
        options["region"] = "us-east-1"  # a custom endpoint: no region lookup against AWS
    else:
        # AWS itself: the bucket's region (another region's endpoint refuses it); unknown: the SDK's default,
        # and a request that fails says why (storage_error)
        with contextlib.suppress(OSError, ValueError):
            options["region"] = pafs.resolve_s3_region(bucket)
    try:
        # delayed open: an object written whole before close goes up in one PUT (no multipart upload)
        fs = pafs.S3FileSystem(allow_delayed_open=True, **options)
    except (pa.ArrowInvalid, OSError) as exc:
        raise LakeError(f"lake {url!r}: cannot configure S3 ({_first_line(exc)})") from None
    return fs, f"{bucket}/{prefix}".rstrip("/")


def _endpoint_var() -> str:
    return next((v for v in ENDPOINT_VARS if os.environ.get(v)), ENDPOINT_VARS[0])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def storage_error(location: str, exc: BaseException, doing: str) -> LakeError:
    """One line for a failed object-store request: what (`doing`), where (the lake, the endpoint) and how to
    fix it (the variables, never their values)."""
    endpoint = next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)), None)
    if endpoint and "@" in endpoint:  # user:password@host: never printed
        endpoint = endpoint.split("://", 1)[0] + "://…@" + endpoint.rsplit("@", 1)[1]
    where = f"{location} (endpoint {endpoint})" if endpoint else location
    text = _first_line(exc)
    lowered = text.lower()
    if "nosuchbucket" in lowered.replace(" ", "") or "bucket does not exist" in lowered:
        fix = "create the bucket or correct the lake URL"
    elif any(w in lowered for w in ("access denied", "accessdenied", "credential", "signature", "forbidden")):
        fix = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) for it"
    elif any(w in lowered for w in ("connect", "resolve", "timed out", "timeout", "curl")):
        fix = "check AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL and the network"
    else:
        fix = "check the lake URL, the AWS_* variables and the bucket's permissions"
    return LakeError(f"{doing} {where} failed: {text}; {fix}")


def map_threads(function: Callable[[pafs.FileInfo], str | None], infos: Iterable[pafs.FileInfo]) -> list[str | None]:
    """`function` over `infos` on a few threads (each call a round trip to the store)."""
    items = list(infos)
    if len(items) < 4:
        return [function(i) for i in items]
    with ThreadPoolExecutor(min(16, len(items))) as pool:
        return list(pool.map(function, items))


def put_bytes(fs: pafs.FileSystem, path: str, data: bytes | pa.Buffer) -> None:
    """Write `data` as the object `path`, whole, in one upload (an object store shows it only once the upload
    completes; nothing partial is ever visible)."""
    with fs.open_output_stream(path) as out:
        out.write(data)


def put_file(fs: pafs.FileSystem, local: Path, path: str) -> None:
    """Upload the finished local file `local` as the object `path` (one PUT; a multipart upload past the
    client's part size, which completes atomically as well)."""
    with open(local, "rb") as src, fs.open_output_stream(path) as out:
        shutil.copyfileobj(src, out, 8 * 1024**2)
