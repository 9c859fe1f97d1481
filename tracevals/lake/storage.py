"""Where a lake's bytes live: a local directory or an object store, as one pyarrow filesystem and a root.

`lake_filesystem(lake)` is the one place that turns a lake (a directory, `s3://bucket/prefix`, or any
other URL `pyarrow.fs.FileSystem.from_uri` takes: `gs://`, `hdfs://`, `file://`) into a
`pyarrow.fs.FileSystem` and the root path of the lake on it. S3 is configured the way AWS tools are:

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
import pyarrow.parquet as pq

from tracevals import env
from tracevals.lake.paths import LakeError, is_remote

ENDPOINT_VARS = (env.AWS_ENDPOINT_URL_S3, env.AWS_ENDPOINT_URL)
REGION_VARS = (env.AWS_REGION, env.AWS_DEFAULT_REGION)
_CREDENTIAL_VARS = (env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN)
_ENV = (*ENDPOINT_VARS, *REGION_VARS, *_CREDENTIAL_VARS)


def lake_filesystem(lake: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """The filesystem that holds `lake` and the lake's root on it (no trailing slash).

    A directory: the local filesystem and its absolute path. `s3://bucket/prefix`: an `S3FileSystem` from
    the AWS_* variables (see the module) and `bucket/prefix`. Another URL: what
    `pyarrow.fs.FileSystem.from_uri` makes of it. An unknown scheme or an S3 URL without a bucket is a
    `LakeError` of one line. Instances are cached per lake and configuration (they hold connections)."""
    text = os.fspath(lake)
    return _filesystem(text, tuple(os.environ.get(name) for name in _ENV))


@functools.lru_cache(maxsize=32)
def _filesystem(lake: str, _config: tuple[str | None, ...]) -> tuple[pafs.FileSystem, str]:
    if not is_remote(lake):
        return pafs.LocalFileSystem(), os.path.abspath(lake).rstrip(os.sep) or os.sep
    scheme = lake.split("://", 1)[0].lower()
    if scheme in ("s3", "s3a"):
        return _s3(lake)
    try:
        fs, path = pafs.FileSystem.from_uri(lake)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError) as exc:
        raise LakeError(
            f"lake {lake!r}: cannot open a {scheme}:// URL ({_first_line(exc)}); use a directory or "
            "s3://bucket/prefix (or another URL pyarrow reads: gs://, hdfs://, file://)"
        ) from None
    return fs, path.rstrip("/")


def _s3(lake: str) -> tuple[pafs.FileSystem, str]:
    parts = urlsplit(lake)
    bucket, prefix = parts.netloc, parts.path.strip("/")
    if not bucket:
        raise LakeError(f"lake {lake!r} names no bucket; write s3://BUCKET/prefix")
    options: dict[str, object] = {}
    endpoint = next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)), None)
    if endpoint:
        url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if url.scheme not in ("http", "https") or not url.netloc:
            raise LakeError(f"{_endpoint_var()}={endpoint!r} is not an http(s) URL; set it like http://127.0.0.1:9000")
        options["endpoint_override"] = url.netloc + url.path.rstrip("/")
        options["scheme"] = url.scheme
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if bool(key) != bool(secret):
        missing = "AWS_SECRET_ACCESS_KEY" if key else "AWS_ACCESS_KEY_ID"
        raise LakeError(f"lake {lake!r}: {missing} is not set (both AWS_ACCESS_KEY_ID and it are needed)")
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
        raise LakeError(f"lake {lake!r}: cannot configure S3 ({_first_line(exc)})") from None
    return fs, f"{bucket}/{prefix}".rstrip("/")


def _endpoint_var() -> str:
    return next((v for v in ENDPOINT_VARS if os.environ.get(v)), ENDPOINT_VARS[0])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def storage_error(lake: str, exc: BaseException, doing: str) -> LakeError:
    """One line for a failed object-store request: what (`doing`), where (the lake, the endpoint) and how to
    fix it (the variables, never their values)."""
    endpoint = next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)), None)
    if endpoint and "@" in endpoint:  # user:password@host: never printed
        endpoint = endpoint.split("://", 1)[0] + "://…@" + endpoint.rsplit("@", 1)[1]
    where = f"{lake} (endpoint {endpoint})" if endpoint else lake
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


def _denied(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "access_denied" in text or "access denied" in text or "accessdenied" in text or "403" in text


def join(root: str, *parts: str) -> str:
    """A path under `root` on its filesystem ('/'-separated, as pyarrow's filesystems take them)."""
    return "/".join([root.rstrip("/"), *(p.strip("/") for p in parts if p)])


def check_lake(lake: str) -> None:
    """For a remote lake: that its bucket answers (a `LakeError` saying what to fix otherwise). A prefix
    that holds nothing yet is a lake nothing has been written to."""
    if not is_remote(lake):
        return
    fs, root = lake_filesystem(lake)
    top = root.split("/", 1)[0] if isinstance(fs, pafs.S3FileSystem) else root
    try:
        info = fs.get_file_info(top)
    except OSError as exc:
        if not _denied(exc):
            raise storage_error(lake, exc, "reading") from None
        # HeadBucket needs s3:ListBucket on the whole bucket; a policy may grant it for the lake's prefix only
        try:
            fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        except OSError as inner:
            raise storage_error(lake, inner, "reading") from None
        return
    if isinstance(fs, pafs.S3FileSystem) and info.type == pafs.FileType.NotFound:
        raise LakeError(f"lake {lake!r}: bucket {top!r} does not exist; create it or correct the lake URL")


def list_parquet(lake: str, sub: str) -> list[pafs.FileInfo]:
    """The committed Parquet files under `LAKE/sub` (not hidden ones: temporary files), in path order."""
    fs, root = lake_filesystem(lake)
    selector = pafs.FileSelector(join(root, sub), allow_not_found=True, recursive=True)
    try:
        infos = fs.get_file_info(selector)
    except OSError as exc:
        raise storage_error(lake, exc, f"listing {sub}/ of") from None
    return sorted(
        (
            i
            for i in infos
            if i.type == pafs.FileType.File and i.base_name.endswith(".parquet") and not i.base_name.startswith(".")
        ),
        key=lambda i: i.path,
    )


def url(lake: str, path: str) -> str:
    """The URL a reader names a file of a remote lake by (`source_file`): the lake's scheme and the path."""
    return f"{lake.split('://', 1)[0]}://{path}"


def unreadable_remote(fs: pafs.FileSystem, info: pafs.FileInfo) -> str | None:
    """`queries.sources.unreadable` for an object: its size, its first 4 and last 8 bytes (two ranged reads)."""
    size = info.size or 0
    if size < 12:
        return f"{size} bytes, too small"
    try:
        with fs.open_input_file(info.path) as fh:
            head = fh.read_at(4, 0)
            tail = fh.read_at(8, size - 8)
    except OSError as exc:
        return f"cannot read: {_first_line(exc)}"
    if head != b"PAR1" or tail[4:] != b"PAR1":
        return "not Parquet: no PAR1 magic"
    if int.from_bytes(tail[:4], "little") + 12 > size:
        return "footer cut short"
    return None


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


def put_table(fs: pafs.FileSystem, path: str, table: pa.Table, **write_options: object) -> int:
    """Write `table` as Parquet to the object `path`: encoded in memory, then one upload. Its size."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **write_options)
    buffer = sink.getvalue()
    put_bytes(fs, path, buffer)
    return buffer.size


def read_text(lake: str, name: str) -> str | None:
    """The text of `LAKE/name` (a small file: `prices.json`), None when there is none."""
    fs, root = lake_filesystem(lake)
    try:
        with fs.open_input_stream(join(root, name)) as fh:
            return bytes(fh.read()).decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        if "NoSuchKey" in str(exc) or "not found" in str(exc).lower():
            return None
        raise storage_error(lake, exc, f"reading {name} of") from None


def write_object(lake: str, name: str, data: bytes) -> None:
    """Write `LAKE/name` (a small document: a run's cases) whole, in one PUT."""
    fs, root = lake_filesystem(lake)
    try:
        put_bytes(fs, join(root, name), data)
    except OSError as exc:
        raise storage_error(lake, exc, f"writing {name} to") from None


def list_names(lake: str, folder: str, suffix: str = ".json") -> list[str]:
    """The names of the files directly in `LAKE/folder` that end in `suffix`, sorted."""
    fs, root = lake_filesystem(lake)
    try:
        infos = fs.get_file_info(pafs.FileSelector(join(root, folder), allow_not_found=True))
    except OSError as exc:
        raise storage_error(lake, exc, f"listing {folder}/ of") from None
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.File and i.base_name.endswith(suffix))
