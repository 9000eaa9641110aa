"""Prints the header dict of a .npy file (format 1.0)."""
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not a .npy file"
length = data[8] | (data[9] << 8)
assert (10 + length) % 64 == 0, "header not padded to 64 bytes"
print(data[10:10 + length].decode("latin1").strip())
