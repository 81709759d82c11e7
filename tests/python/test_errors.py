"""Failures as the Python exceptions a Python user catches, each with the message the CLI
prints for the same failure."""

from __future__ import annotations

import errno
import logging
import subprocess

import pytest

import tensorstream
from conftest import free_port, write_safetensors

import torch


def cli_error(cli: str, url: str) -> str:
    """The message after `tensorstream: error: ` that the CLI prints for streaming `url`."""
    result = subprocess.run([cli, "stream", url], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    line, = result.stderr.strip().splitlines()
    assert line.startswith("tensorstream: error: ")
    return line[len("tensorstream: error: "):]


def first_error(url: str, **options) -> BaseException:
    with pytest.raises(tensorstream.Error) as raised:
        dict(tensorstream.SafeTensorsStreamer(url, **options).get_tensors())
    return raised.value


def test_a_missing_object_is_a_file_not_found_error_with_the_cli_message(tmp_path, nginx_factory,
                                                                         cli):
    server = nginx_factory(tmp_path)
    url = f"{server.url}/absent/model.safetensors"
    error = first_error(url)
    assert isinstance(error, FileNotFoundError)
    assert isinstance(error, tensorstream.NotFoundError)
    assert error.object == url and error.cause.startswith("HTTP 404")
    assert error.errno == errno.ENOENT and error.filename is None
    assert not error.transient
    assert str(error) == cli_error(cli, url)


def test_a_missing_local_directory_is_a_file_not_found_error(tmp_path, cli):
    error = first_error(str(tmp_path / "absent") + "/")
    assert isinstance(error, FileNotFoundError)
    assert str(error) == cli_error(cli, str(tmp_path / "absent") + "/")


def test_a_malformed_header_is_a_value_error_naming_the_file(tmp_path, cli):
    path = tmp_path / "model.safetensors"
    path.write_bytes((40).to_bytes(8, "little") + b'{"a": {"dtype": "F32", "shape": [2]}}   ')
    error = first_error(str(path))
    assert isinstance(error, ValueError) and isinstance(error, tensorstream.FormatError)
    assert str(path) in str(error)
    assert str(error) == cli_error(cli, str(path))


def test_a_header_length_beyond_the_file_is_a_value_error(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes((1 << 20).to_bytes(8, "little") + b"{}")
    assert isinstance(first_error(str(path)), ValueError)


def test_a_refused_request_is_a_permission_error(tmp_path, nginx_factory, cli):
    write_safetensors(tmp_path / "secret" / "model.safetensors", {"a": torch.zeros(4)})
    server = nginx_factory(tmp_path, "location /secret/ { return 403; }")
    url = f"{server.url}/secret/model.safetensors"
    error = first_error(url)
    assert isinstance(error, PermissionError) and isinstance(error, tensorstream.StorageError)
    assert error.cause.startswith("HTTP 403") and error.errno == errno.EACCES
    assert str(error) == cli_error(cli, url)


def test_a_server_error_is_retried_then_an_os_error(tmp_path, nginx_factory, caplog):
    server = nginx_factory(tmp_path, "location /broken/ { return 500; }")
    with caplog.at_level(logging.WARNING, logger="tensorstream"):
        error = first_error(f"{server.url}/broken/model.safetensors", max_retries=1)
    # The retry was logged through Python's logging, which the application configures.
    retries = [record for record in caplog.records if record.name == "tensorstream"]
    assert len(retries) == 1 and retries[0].levelno == logging.WARNING
    assert "HTTP 500" in retries[0].getMessage() and "retrying" in retries[0].getMessage()
    assert type(error) is tensorstream.StorageError
    assert isinstance(error, OSError)
    assert not isinstance(error, (FileNotFoundError, PermissionError))
    assert error.transient and error.cause.startswith("HTTP 500")


def test_an_unreachable_host_is_an_os_error_naming_the_url(model_dir):
    url = f"http://127.0.0.1:{free_port()}/model.safetensors"
    error = first_error(url, max_retries=0, connect_timeout=2)
    assert isinstance(error, tensorstream.StorageError)
    assert error.object == url and str(error).startswith(url + ": ")


def test_a_server_that_never_answers_fails_after_the_response_timeout():
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/model.safetensors"
        error = first_error(url, max_retries=0, response_timeout=0.05, read_timeout=3600)
    assert type(error) is tensorstream.StorageError and error.transient
    assert str(error) == url + ": no response for 50 ms (after 1 attempt)"


def test_missing_credentials_are_a_permission_error(tmp_path, monkeypatch):
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                     "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                     "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                     "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    error = first_error("s3://bucket/model/", endpoint_url=f"http://127.0.0.1:{free_port()}")
    assert isinstance(error, PermissionError) and isinstance(error, tensorstream.CredentialsError)
    assert error.service == "AWS"
    assert str(error).startswith("AWS credentials from ")


@pytest.mark.parametrize("options, message", [
    ({"chunk_size": 0}, "chunk_size must be positive, got 0"),
    ({"max_concurrency": -3}, "max_concurrency must be positive, got -3"),
    ({"read_order": "random"},
     "read_order must be one of 'smallest_first', 'file_order', got 'random'"),
    ({"connect_timeout": -1.0}, "connect_timeout must be a positive number of seconds, got -1.0"),
    ({"io_threads": 100000}, "io_threads 100000 is too large (at most 1024)"),
    ({"max_concurrency": 10**9}, "max_concurrency 1000000000 is above the limit of 4096"),
    ({"response_timeout": 0}, "response_timeout must be a positive number of seconds, got 0"),
    ({"direct_io": "always"}, "direct_io must be one of 'auto', 'on', 'off', got 'always'"),
    ({"read_timeout": 10**400}, "read_timeout must be a positive number of seconds, got " +
     str(10**400)),
])
def test_a_bad_option_value_is_a_value_error_naming_it(model_dir, options, message):
    directory, _ = model_dir
    with pytest.raises(ValueError) as raised:
        tensorstream.SafeTensorsStreamer(directory, **options)
    assert isinstance(raised.value, tensorstream.InvalidArgumentError)
    assert str(raised.value) == message


@pytest.mark.parametrize("options, message", [
    ({"chunk_size": "16MiB"}, "chunk_size must be an int, not str"),
    ({"memory_limit": True}, "memory_limit must be an int, not bool"),
    ({"verify": "no"}, "verify must be a bool, not str"),
])
def test_an_option_of_the_wrong_type_is_a_type_error(model_dir, options, message):
    directory, _ = model_dir
    with pytest.raises(TypeError, match=message):
        tensorstream.SafeTensorsStreamer(directory, **options)


def test_an_unknown_keyword_is_a_type_error_listing_the_store_options(model_dir):
    directory, _ = model_dir
    with pytest.raises(TypeError) as raised:
        tensorstream.SafeTensorsStreamer(directory, aws_region="eu-west-1")
    assert "unexpected keyword argument 'aws_region'" in str(raised.value)
    assert "endpoint_url" in str(raised.value)


def test_a_rank_outside_the_tensor_parallel_size_is_a_value_error(model_dir):
    directory, _ = model_dir
    with pytest.raises(ValueError):
        tensorstream.SafeTensorsStreamer(directory, rank=2, tensor_parallel_size=2)


def test_a_key_s3_does_not_know_is_an_access_denied_error(tmp_path, s3rver, monkeypatch, cli):
    # S3 refuses with 403 and a code of its own, InvalidAccessKeyId (s3rver knows its key
    # S3RVER): a PermissionError all the same.
    write_safetensors(tmp_path / "m" / "model.safetensors", {"a": torch.zeros(4)})
    s3rver.put("m/model.safetensors", tmp_path / "m" / "model.safetensors")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3rver.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN")
    url = "s3://models/m/model.safetensors"
    error = first_error(url)
    assert isinstance(error, tensorstream.AccessDeniedError)
    assert isinstance(error, PermissionError) and error.errno == errno.EACCES
    assert error.cause.startswith("InvalidAccessKeyId: ") and not error.transient
    assert str(error) == cli_error(cli, url)
