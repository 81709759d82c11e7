#!/usr/bin/env python3
"""An independent writer and checker of the TRAW format, from its spec, with only `struct`.

    traw_spec.py write OUT CODE DIMS DATA  write OUT: header for shape DIMS ("64128,8192") and
                                           dtype CODE, then the bytes of file DATA
    traw_spec.py verify FILE               print "shape=4,8 dtype_code=3 data_size=128", or
                                           print why FILE is not a valid TRAW file and exit 1

The tests run it against tensorstream's own reader and writer, so it shares no code with them.
"""
import struct
import sys

# Element sizes by code: 1-4 from the spec; 101-108 are tensorstream's extension.
ELEMENT_SIZE = {
    1: 2, 2: 2, 3: 4, 4: 8,
    101: 1, 102: 1, 103: 2, 104: 4, 105: 8, 106: 1, 107: 1, 108: 1,
}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write(out, code, dims, data_path):
    shape = [int(d) for d in dims.split(",")]
    with open(data_path, "rb") as f:
        data = f.read()
    data_size = numel(shape) * ELEMENT_SIZE[code]
    if len(data) != data_size:
        sys.exit(f"{data_path} holds {len(data)} bytes, shape {shape} needs {data_size}")
    with open(out, "wb") as f:
        f.write(b"TRAW")
        f.write(struct.pack("<I", 1))
        f.write(struct.pack("<I", len(shape)))
        for d in shape:
            f.write(struct.pack("<Q", d))
        f.write(struct.pack("<I", code))
        f.write(struct.pack("<Q", data_size))
        f.write(data)


def verify(path):
    with open(path, "rb") as f:
        content = f.read()
    if content[:4] != b"TRAW":
        return f"magic is {content[:4]!r}"
    if len(content) < 12:
        return f"{len(content)} bytes, too short for version and ndim"
    version, ndim = struct.unpack_from("<II", content, 4)
    if version != 1:
        return f"version is {version}"
    if not 0 < ndim <= 10:
        return f"ndim is {ndim}"
    header_size = 24 + 8 * ndim
    if len(content) < header_size:
        return f"{len(content)} bytes, header needs {header_size}"
    shape = struct.unpack_from(f"<{ndim}Q", content, 12)
    code, data_size = struct.unpack_from("<IQ", content, 12 + 8 * ndim)
    if any(d == 0 for d in shape):
        return f"shape {shape} has a zero dimension"
    if code not in ELEMENT_SIZE:
        return f"unknown dtype code {code}"
    if data_size != numel(shape) * ELEMENT_SIZE[code]:
        return f"data_size {data_size} does not match shape {shape} and code {code}"
    if len(content) != header_size + data_size:
        return f"{len(content)} bytes, expected {header_size + data_size}"
    print(f"shape={','.join(map(str, shape))} dtype_code={code} data_size={data_size}")
    return None


def main(argv):
    if len(argv) == 6 and argv[1] == "write":
        write(argv[2], int(argv[3]), argv[4], argv[5])
    elif len(argv) == 3 and argv[1] == "verify":
        problem = verify(argv[2])
        if problem:
            sys.exit(f"{argv[2]}: {problem}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
