"""Writes a .npy file (format 1.0, '<f4') whose header claims the shape
given on the command line and whose data is 16 bytes, whatever the shape
says: write_npy_header.py PATH SIZE…"""
import sys

path, sizes = sys.argv[1], sys.argv[2:]
shape = "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + bytes([len(header) & 0xff, len(header) >> 8]))
    f.write(header.encode("latin1") + bytes(16))
