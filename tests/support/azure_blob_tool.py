#!/usr/bin/python3
"""Seeds and inspects an Azure Blob Storage account (Azurite in the tests) with the Azure SDK.

The tests check tensorstream's Azure store against what this independent client wrote or reads
back, so the two cannot share a misunderstanding of the protocol. Debian's python3-azure-storage
provides azure.storage.blob.

    azure_blob_tool.py [--connection-string CS] [--ca-file PEM] COMMAND ...

The connection string comes from --connection-string or AZURE_STORAGE_CONNECTION_STRING.
Commands:

    create-container CONTAINER [--public-access blob|container]
    put CONTAINER BLOB FILE          uploads FILE as a block blob, replacing any
    put-dir CONTAINER PREFIX DIR     uploads every file under DIR as PREFIX + its relative path
    sha256 CONTAINER BLOB            prints the content's hex SHA-256, or "missing" and exits 3
    list CONTAINER [PREFIX]          prints the names under PREFIX, one a line
    delete CONTAINER BLOB
    account-sas [--permissions rl] [--resource-types sco] [--expiry-minutes 60]
    container-sas CONTAINER [--permissions rl] [--expiry-minutes 60]

SAS tokens are printed without a leading '?'.
"""

import argparse
import datetime
import hashlib
import os
import sys

from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import (AccountSasPermissions, BlobServiceClient,
                                ContainerSasPermissions, ResourceTypes, generate_account_sas,
                                generate_container_sas)

MISSING_EXIT_CODE = 3


def expiry(minutes):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=minutes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connection-string",
                        default=os.environ.get("AZURE_STORAGE_CONNECTION_STRING"))
    parser.add_argument("--ca-file", help="PEM CA bundle to trust when the endpoint is https")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("create-container")
    command.add_argument("container")
    command.add_argument("--public-access", choices=["blob", "container"])
    command = commands.add_parser("put")
    command.add_argument("container")
    command.add_argument("blob")
    command.add_argument("file")
    command = commands.add_parser("put-dir")
    command.add_argument("container")
    command.add_argument("prefix")
    command.add_argument("directory")
    for name in ("sha256", "delete"):
        command = commands.add_parser(name)
        command.add_argument("container")
        command.add_argument("blob")
    command = commands.add_parser("list")
    command.add_argument("container")
    command.add_argument("prefix", nargs="?", default="")
    command = commands.add_parser("account-sas")
    command.add_argument("--permissions", default="rl")
    command.add_argument("--resource-types", default="sco")
    command.add_argument("--expiry-minutes", type=int, default=60)
    command = commands.add_parser("container-sas")
    command.add_argument("container")
    command.add_argument("--permissions", default="rl")
    command.add_argument("--expiry-minutes", type=int, default=60)
    args = parser.parse_args()
    if not args.connection_string:
        parser.error("no --connection-string and no AZURE_STORAGE_CONNECTION_STRING")

    # The account is on loopback: a proxy from the environment would only be in the way.
    for variable in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                     "ALL_PROXY"):
        os.environ.pop(variable, None)
    options = {"connection_verify": args.ca_file} if args.ca_file else {}
    service = BlobServiceClient.from_connection_string(args.connection_string, **options)
    account, key = service.credential.account_name, service.credential.account_key

    if args.command == "create-container":
        service.create_container(args.container, public_access=args.public_access)
    elif args.command == "put":
        with open(args.file, "rb") as data:
            service.get_blob_client(args.container, args.blob).upload_blob(data, overwrite=True)
    elif args.command == "put-dir":
        container = service.get_container_client(args.container)
        for root, _, files in os.walk(args.directory):
            for name in sorted(files):
                path = os.path.join(root, name)
                blob = args.prefix + os.path.relpath(path, args.directory)
                with open(path, "rb") as data:
                    container.upload_blob(blob, data, overwrite=True)
    elif args.command == "sha256":
        blob = service.get_blob_client(args.container, args.blob)
        digest = hashlib.sha256()
        try:
            for chunk in blob.download_blob().chunks():
                digest.update(chunk)
        except ResourceNotFoundError:
            print("missing")
            return MISSING_EXIT_CODE
        print(digest.hexdigest())
    elif args.command == "list":
        container = service.get_container_client(args.container)
        for name in container.list_blob_names(name_starts_with=args.prefix or None):
            print(name)
    elif args.command == "delete":
        service.get_blob_client(args.container, args.blob).delete_blob()
    elif args.command == "account-sas":
        print(generate_account_sas(account, key,
                                   ResourceTypes.from_string(args.resource_types),
                                   AccountSasPermissions.from_string(args.permissions),
                                   expiry(args.expiry_minutes)))
    elif args.command == "container-sas":
        print(generate_container_sas(account, args.container, account_key=key,
                                     permission=ContainerSasPermissions.from_string(
                                         args.permissions),
                                     expiry=expiry(args.expiry_minutes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
