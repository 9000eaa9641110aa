"""Calls an `export fn` of a library built with `dlc build --lib` from
Python through ctypes. The C prototype is read from the generated header
(docs/embedding.md): each array is a pointer followed by its sizes in
written order, a scalar is passed by value, and each result is a pointer
(with sizes for an array) that the call fills."""
import ctypes
import re

import numpy as np

C_TYPES = {"float": ctypes.c_float, "double": ctypes.c_double,
           "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
           "bool": ctypes.c_bool}
NUMPY_OF = {"float": np.float32, "double": np.float64, "int32_t": np.int32,
            "int64_t": np.int64, "bool": np.bool_}


class Entry:
    """One entry `PREFIX_NAME`: call(*inputs) returns a tuple of numpy
    results (a 0-d array for a scalar)."""

    def __init__(self, library, header_text, prefix, name, result_shapes):
        match = re.search(r"%s_status %s_%s\(%s_context\* ctx,(.*?)\);" %
                          (prefix, prefix, name, prefix), header_text, re.S)
        if not match:
            raise SystemExit("no entry %s_%s in the header" % (prefix, name))
        # (kind, C type, argument name) per C argument after the context.
        self.args = []
        for arg in match.group(1).split(","):
            words = arg.replace("*", " * ").split()
            pointer = "*" in words
            c_type = [w for w in words if w in C_TYPES][0]
            self.args.append((pointer, c_type, words[-1]))
        self.function = getattr(library, "%s_%s" % (prefix, name))
        self.function.restype = ctypes.c_int32
        self.result_shapes = result_shapes
        self.context = library_context(library, prefix)
        self.last_error = getattr(library, prefix + "_last_error")
        self.last_error.restype = ctypes.c_char_p

    def prepare(self, *inputs):
        """The C arguments for `inputs`, and the result buffers."""
        values = [self.context]
        results = []
        pending = list(inputs)
        k = 0
        while k < len(self.args):
            pointer, c_type, name = self.args[k]
            k += 1
            is_result = name.startswith("result")
            if is_result:
                shape = self.result_shapes[len(results)]
                array = np.zeros(shape, dtype=NUMPY_OF[c_type])
                results.append(array)
            elif pointer:
                array = np.ascontiguousarray(pending.pop(0),
                                             dtype=NUMPY_OF[c_type])
                pending_keep.append(array)
            else:
                values.append(C_TYPES[c_type](pending.pop(0)))
                continue
            values.append(array.ctypes.data_as(ctypes.c_void_p))
            for size in array.shape:
                pointer_next, _, size_name = self.args[k]
                assert not pointer_next and size_name.startswith(name + "_")
                values.append(ctypes.c_int64(size))
                k += 1
        return values, results

    def call(self, prepared):
        values, results = prepared
        status = self.function(*values)
        if status != 0:
            raise RuntimeError(self.last_error(self.context).decode())
        return tuple(results)


pending_keep = []  # input buffers that must outlive the calls


def library_context(library, prefix):
    create = getattr(library, prefix + "_context_create")
    create.restype = ctypes.c_void_p
    create.argtypes = [ctypes.c_void_p]
    return ctypes.c_void_p(create(None))


def load(directory, prefix):
    library = ctypes.CDLL("%s/lib%s.so" % (directory, prefix))
    header = open("%s/%s.h" % (directory, prefix)).read()
    return library, header
